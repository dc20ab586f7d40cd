import { runCli } from './run-cli'

// The `arbor` executable (bin/arbor.js runs the built form of this file).
const code = await runCli(process.argv.slice(2), {
  out: text => { process.stdout.write(text) },
  err: text => { process.stderr.write(text) },
  env: process.env,
  cwd: process.cwd()
})
process.exitCode = code
