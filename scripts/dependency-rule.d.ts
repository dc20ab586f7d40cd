export type Unit =
  | 'shared' | 'disk' | 'secrets' | 'history' | 'sync' | 'llm' | 'tools' | 'runtime'
  | 'root' | 'api' | 'cli' | 'electron' | 'preload' | 'renderer' | 'types'

export const UNITS: Record<Unit, string>
export const ALLOWED: Record<Unit, readonly Unit[]>
/** from a file, to a file or (ending in /) a folder */
export const PENDING_ONE_API_EXCEPTIONS: ReadonlyArray<{ from: string; to: string }>
export const NO_NODE_BUILTINS: readonly Unit[]
export const MAY_IMPORT_ELECTRON: readonly Unit[]
export function unitOf(file: string): Unit | undefined
