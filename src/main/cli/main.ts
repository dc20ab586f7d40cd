import { runCli } from './run-cli'

// The `arbor` executable (bin/arbor.js runs the built form of this file).
// Ctrl-C asks the running command to stop cleanly (an agent records that it was cancelled);
// a second Ctrl-C exits at once.
const interrupt = new AbortController()
for (const sig of ['SIGINT', 'SIGTERM'] as const) {
  process.on(sig, () => {
    if (interrupt.signal.aborted) process.exit(130)
    interrupt.abort()
  })
}
// `arbor ls | head`: the reader closed the pipe once it had seen enough; the rest is not wanted
// (the shell's convention for it, 128 + SIGPIPE, and no stack trace).
process.stdout.on('error', (err: NodeJS.ErrnoException) => {
  if (err.code !== 'EPIPE') throw err
  process.exit(141)
})
const code = await runCli(process.argv.slice(2), {
  signal: interrupt.signal,
  out: text => { process.stdout.write(text) },
  err: text => { process.stderr.write(text) },
  env: process.env,
  cwd: process.cwd()
})
process.exitCode = code
