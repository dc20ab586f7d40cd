// The utilityProcess Electron main forks (out/main/node.js): the node of the desktop app.
// Everything it does is in ../node-process.ts, which runs on plain Node; this file only
// binds it to Electron's parentPort, the signals and the exit.
import type { ParentPortLike } from './node-process-protocol'
import { NodeProcess } from './node-process'

const parent = (process as { parentPort?: ParentPortLike | null }).parentPort
if (parent === undefined || parent === null) {
  console.error('Arbor: out/main/node.js is the desktop app\'s node; Electron starts it. Headless, run `arbor serve`.')
  process.exit(2)
}

const node = new NodeProcess({ parent, exit: code => process.exit(code) })
// SIGTERM (utilityProcess.kill()) closes cleanly — unless a close is under way already:
// then main has waited long enough for it, and this process ends at once.
process.on('SIGTERM', () => {
  if (node.stopping) process.exit(1)
  void node.stop()
})
// Ctrl-C in the terminal reaches the whole process group: main quits and shuts the node down cleanly.
process.on('SIGINT', () => undefined)
