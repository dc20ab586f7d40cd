// `npm start`: build if needed, then run the desktop app — or explain why it cannot run here.
import { spawn, spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { electronStartDecision, findElectronBinary } from './electron-check.js'

const root = resolve(import.meta.dirname, '..')

// The shell and the node it forks (a build from before the node ran apart lacks node.js).
if (!['out/main/index.js', 'out/main/node.js'].every(f => existsSync(join(root, f)))) {
  const build = spawnSync('npx', ['electron-vite', 'build'], {
    cwd: root, stdio: 'inherit', shell: process.platform === 'win32'
  })
  if (build.status !== 0) {
    console.error('Arbor: the build failed (see above).')
    process.exit(build.status ?? 1)
  }
}

const binaryPath = findElectronBinary()
const decision = electronStartDecision({ platform: process.platform, env: process.env, binaryPath })
if (!decision.ok || !binaryPath) {
  console.error(decision.ok ? 'Arbor: Electron cannot start.' : decision.message)
  process.exit(1)
}

// Electron would run as plain Node with this set.
const env = { ...process.env }
delete env.ELECTRON_RUN_AS_NODE

const child = spawn(binaryPath, [root], { cwd: root, stdio: 'inherit', env })
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.on(signal, () => {
    if (child.exitCode === null && child.signalCode === null) child.kill(signal)
  })
}
child.on('error', (error) => {
  console.error(`Arbor: could not start Electron (${error.message}).`)
  process.exit(1)
})
child.on('close', (code, signal) => {
  process.exit(code ?? (signal ? 1 : 0))
})
