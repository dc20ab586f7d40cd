// Electron's UtilityProcess as Electron main forks the node, for tests of main without
// Electron. No vitest here: electron-main.test.ts loads it inside vi.hoisted.
import { EventEmitter } from 'node:events'
import { PassThrough } from 'node:stream'
import type { NodeChild } from '../../src/main/electron/node-host'
import type { FromNode, ToNode } from '../../src/main/electron/node-process-protocol'

/** A stand-in for the node's UtilityProcess: records what main posts; the test plays the node. */
export class FakeUtility extends EventEmitter implements NodeChild {
  static pids = 1000
  readonly pid = FakeUtility.pids++
  readonly stdout = new PassThrough()
  readonly stderr = new PassThrough()
  readonly posted: Array<{ msg: ToNode; transfer: unknown[] }> = []
  kills = 0
  exited = false

  /** what utilityProcess.fork was given */
  constructor (readonly modulePath = '', readonly args: string[] = [], readonly options: Record<string, unknown> = {}) { super() }

  postMessage (message: unknown, transfer: unknown[] = []): void { this.posted.push({ msg: message as ToNode, transfer }) }
  kill (): boolean { this.kills++; return true }
  /** the node sends main a message */
  say (msg: FromNode): void { this.emit('message', msg) }
  exit (code: number): void {
    this.exited = true
    this.stdout.end()
    this.stderr.end()
    this.emit('exit', code)
  }

  /** the types of the messages main posted */
  types (): string[] { return this.posted.map(p => p.msg.type) }
}
