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
const code = await runCli(process.argv.slice(2), {
  signal: interrupt.signal,
  out: text => { process.stdout.write(text) },
  err: text => { process.stderr.write(text) },
  env: process.env,
  cwd: process.cwd()
})
process.exitCode = code
