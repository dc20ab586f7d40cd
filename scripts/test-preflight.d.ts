export function chromiumPath(env?: Record<string, string | undefined>): string

export function probeSystem(env?: Record<string, string | undefined>): { bwrap: boolean; chromium: boolean }

export function preflightMessage(input: {
  platform: string
  found: { bwrap: boolean; chromium: boolean }
  chromium: string
}): string | null
