// The Electron shell (DESIGN.md, "Processes"): one window showing the renderer, and the
// node in a supervised utilityProcess. Kept thin on purpose; everything else runs on plain
// Node (the node itself is ../node-process.ts).
import { join } from 'node:path'
import { app, BrowserWindow, dialog, MessageChannelMain, safeStorage, utilityProcess, type MessagePortMain } from 'electron'
import { dataDir } from '../disk/data-dir'
import type { Clock } from '../../shared/clock'
import { openLogFile } from './log-file'
import { NodeHost } from './node-host'
import { openSecretVault } from './secret-vault'
import { createMainWindow, WindowLink } from './window'

export interface AppOptions {
  /** default: what the CLI uses (ARBOR_DATA, else the per-user application data directory) */
  dataDir?: string
  /** tests move time instead of waiting (restart backoff, shutdown timeouts) */
  clock?: Clock
  random?: () => number
  forceKill?: (pid: number) => void
  /** where log lines are echoed besides the file (default stderr) */
  echoLog?: (line: string) => void
}

export function runApp (opts: AppOptions = {}): void {
  if (!app.requestSingleInstanceLock()) {
    app.quit()
    return
  }
  const dir = opts.dataDir ?? dataDir(undefined, process.env)
  const logFile = openLogFile(join(dir, 'logs', 'desktop.log'), opts.echoLog !== undefined ? { echo: opts.echoLog } : {})
  const log = logFile.for('main')
  let win: BrowserWindow | null = null
  let link: WindowLink | null = null
  let host: NodeHost<MessagePortMain> | null = null
  let quitting: 'no' | 'stopping-node' | 'yes' = 'no'

  const open = (): void => {
    const w = createMainWindow()
    win = w
    if (host !== null) link = new WindowLink(w, host)
    w.on('closed', () => { if (win === w) { win = null; link = null } })
  }

  const nodeFailed = async (message: string): Promise<void> => {
    const options = {
      type: 'error' as const,
      title: 'Arbor',
      message: 'Arbor’s node keeps stopping',
      detail: `${message}.\n\nYour history is safe on disk. The log is at ${logFile.file}: it says what went wrong. Try again, or quit and start Arbor later.`,
      buttons: ['Try again', 'Quit Arbor'],
      defaultId: 0,
      cancelId: 1,
      noLink: true
    }
    const { response } = win !== null ? await dialog.showMessageBox(win, options) : await dialog.showMessageBox(options)
    if (response === 0) await host?.retry()
    else app.quit()
  }

  app.on('second-instance', () => {
    if (!win) {
      if (app.isReady()) open()
      return
    }
    if (win.isMinimized()) win.restore()
    win.focus()
  })
  app.on('window-all-closed', () => app.quit())
  app.on('activate', () => { if (BrowserWindow.getAllWindows().length === 0) open() })
  // A clean quit: the node closes first (its agents record that they stopped), then the app.
  app.on('before-quit', event => {
    if (quitting === 'yes' || host === null) { quitting = 'yes'; return }
    event.preventDefault()
    if (quitting === 'stopping-node') return
    quitting = 'stopping-node'
    log.info('quitting: stopping the node')
    void host.close()
      .catch((err: Error) => { log.error(`the node did not stop cleanly: ${err.message}`) })
      .then(() => {
        quitting = 'yes'
        app.quit()
      })
  })

  void app.whenReady().then(async () => {
    if (quitting !== 'no') return
    const secrets = await openSecretVault({ dataDir: dir, safeStorage, platform: process.platform, log: logFile.for('secrets') })
    const h = new NodeHost<MessagePortMain>({
      fork: () => utilityProcess.fork(join(import.meta.dirname, 'node.js'), [], { serviceName: 'Arbor node', stdio: 'pipe' }),
      channel: () => new MessageChannelMain(),
      dataDir: dir,
      secrets,
      log: logFile.for('node'),
      ...(opts.clock !== undefined ? { clock: opts.clock } : {}),
      ...(opts.random !== undefined ? { random: opts.random } : {}),
      ...(opts.forceKill !== undefined ? { forceKill: opts.forceKill } : {})
    })
    host = h
    h.on('up', () => { link?.nodeUp() })
    h.on('down', ({ message }) => { link?.nodeDown(message) })
    h.on('failed', ({ message }) => {
      link?.nodeDown(message)
      nodeFailed(message).catch((err: Error) => { log.error(`could not show the failure: ${err.message}`) })
    })
    open()
    await h.ready()
    log.info(`started; data in ${dir}; the log is ${logFile.file}`)
  }).catch((err: Error) => {
    log.error(`Arbor could not start: ${err.stack ?? err.message}`)
    dialog.showErrorBox('Arbor could not start', `${err.message}\n\nThe log is at ${logFile.file}.`)
    app.quit()
  })
}
