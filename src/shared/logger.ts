/** Where a component reports what happened; the composition root decides where it goes. */
export interface Logger {
  info (message: string): void
  warn (message: string): void
  error (message: string): void
}

/** Warnings and errors to the console (stderr under Node), info only when verbose. */
export function consoleLogger (component: string, verbose = false): Logger {
  return {
    info: m => { if (verbose) console.error(`arbor ${component}: ${m}`) },
    warn: m => console.error(`arbor ${component} warning: ${m}`),
    error: m => console.error(`arbor ${component} error: ${m}`)
  }
}

/** Collects messages, for tests and for showing a component's recent warnings. */
export function memoryLogger (): Logger & { lines: Array<{ level: 'info' | 'warn' | 'error'; message: string }> } {
  const lines: Array<{ level: 'info' | 'warn' | 'error'; message: string }> = []
  return {
    lines,
    info: message => { lines.push({ level: 'info', message }) },
    warn: message => { lines.push({ level: 'warn', message }) },
    error: message => { lines.push({ level: 'error', message }) }
  }
}
