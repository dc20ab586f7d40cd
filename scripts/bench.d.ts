export interface RunInfo {
  bench: string
  started: string
  time: string
  commit: string
  dirty: boolean | null
  node: string
  loadAverage: number[]
}

export function annotate(line: string, run: RunInfo): string | null

export function resultsFile(root: string, started: Date, commit: string): string

export function gitState(root: string): { commit: string; dirty: boolean | null }
