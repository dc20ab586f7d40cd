export type ElectronDecision =
  | { ok: true }
  | { ok: false; reasons: Array<'no-binary' | 'no-display'>; message: string }

export function electronStartDecision(input: {
  platform: string
  env: Record<string, string | undefined>
  binaryPath: string | null
}): ElectronDecision

export function findElectronBinary(env?: Record<string, string | undefined>): string | null
