export type Unit =
  | 'shared' | 'disk' | 'secrets' | 'history' | 'sync' | 'llm' | 'tools' | 'runtime'
  | 'root' | 'api' | 'cli' | 'electron' | 'preload' | 'renderer' | 'types'

export const UNITS: Record<Unit, string>
export const ALLOWED: Record<Unit, readonly Unit[]>
export const NO_NODE_BUILTINS: readonly Unit[]
export const MAY_IMPORT_ELECTRON: readonly Unit[]
export function unitOf(file: string): Unit | undefined
