import fs from 'node:fs'
import path from 'node:path'
import type { ConversationDag } from '../../shared/conversation-dag'
import type { Entry } from '../../shared/entry'
import { entryByRef } from '../../shared/entry-ref'
import { consoleLogger } from '../../shared/logger'
import type { PeerVersion } from '../../shared/protocol-version'
import { ARBOR_VERSION } from '../../shared/app-version'
import { indexDir, readSummaries, sortSummaries, type ConversationSummary } from '../history/history-index'
import type { HistoryStore } from '../history/history-store'
import type { SecretStore } from '../secrets/secret-store'
import type { NodeCommandOptions } from './node-commands'
import type { CliApi } from './api-session'
import { NodeLostError } from './node-lost'
import type { ApiService } from '../api/api-service'
import { CliUsageError, parseCommandLine, type CliValues, type CommandLine } from './cli-options'
import { dataDir } from '../disk/data-dir'
import { terminalJson, terminalSafeWriter } from './terminal-text'
// Only what `ls` needs is imported here; every other command imports its modules when it runs
// (the entry schema alone, zod, takes longer to load than listing 10,000 conversations).
import type { EventEmitter } from 'node:events'
import type { AgentHost } from '../runtime/agent/agent-host'
import type { PlacementStatus, PostOutcome } from '../runtime/placement/agent-placement'
import type { AgentRef } from '../runtime/placement/placement'
import type { NodeAgentEvents } from '../node'

export interface CliIo {
  out: (text: string) => void
  err: (text: string) => void
  env: NodeJS.ProcessEnv
  cwd: string
  /** aborted on Ctrl-C */
  signal?: AbortSignal
}

/** An error meant for the user: printed as one line, exit code 1 (2 for usage). */
export class CliError extends Error {
  constructor (message: string, readonly exitCode = 1) {
    super(message)
    this.name = 'CliError'
  }
}

const USAGE = `usage: arbor <command> [options]

  new [--title T] [--cwd DIR] [--auto-revival]
                                        start a conversation; prints its id (--auto-revival: if the
                                        device running its agent dies, a live one takes it over)
  post <conv> <text> [--parent ID]      add a message to the history without asking the agent
                                        (a new branch if ID is not a tip); chat asks it
  ls [--json]                           list conversations, most recent first
  tree <conv>                           the conversation's branches as a tree
  show <conv> [--leaf ID]               the transcript of one branch
  export <conv> --format md|json [--leaf ID]
                                        Markdown of one branch, or every entry as JSON
  serve [--bootstrap HOST:PORT,...] [--name NAME] [--offline]
                                        run this device's node: sync with paired devices (Ctrl-C stops;
                                        --offline: the network stays off until \`arbor net on\`)
  invite                                print a one-time code for another device to join
  join <code>                           join the devices of the one that made the code
  devices [--json]                      this device and the paired ones: online, last seen, behind
  forget <device>                       stop accepting a device (key prefix or name)
  net on|off                            take the running node off the network and back
  chat <conv> | --new  <message> [--provider openai|fake] [--model M] [--base-url URL]
       [--script FILE] [--cwd DIR] [--no-sandbox | --sandbox]
                                        send a message and run the agent to the end of its turn
  resume <conv>                         run the conversation's agent on this device from now on
  status <conv>                         where its agent runs, its epoch, and how it moved

  Each command takes only the options shown beside it (and --data).
  <conv> is a conversation id or any unique prefix of it; ID an entry id or prefix.
  --data DIR (or ARBOR_DATA) picks the data directory; --bootstrap (or ARBOR_BOOTSTRAP)
  a private DHT instead of the public one. While \`arbor serve\` runs, every command goes through it.`

type Values = CliValues

/** What a running node lends the CLI when a command runs inside it (through its local socket). */
export interface CliContext {
  store?: HistoryStore
  node?: NodeCommands
  /** the node's API key store (in the desktop app, encrypted by Electron main) */
  secrets?: SecretStore
}

/** A device as `arbor devices` lists it. */
export interface DeviceRow {
  device: string
  name: string
  self: boolean
  connected: boolean
  suspected: boolean
  /** when this node began to suspect it (ms since the epoch): how long failure detection took */
  suspectedSince?: number
  lastSeen?: number
  behind: number
  /** the device whose signed pairing brought it in (its name), when not this one */
  addedBy?: string
  /** how its Arbor compares with this one's, once it said hello */
  version?: PeerVersion
}

/** What the CLI uses of a node it runs inside (the transitional `cli` socket method) or was lent (tests). */
export interface NodeCommands {
  /** the node's API: the commands that are its clients use it in process */
  readonly apiService: ApiService | null
  devices (): Promise<DeviceRow[]>
  /** moves a conversation's agent to this device (a higher epoch) */
  resume (conversation: string): Promise<AgentRef>
  agentStatus (conversation: string): Promise<PlacementStatus>
  /** the node's own agents: `chat` runs through them, so a device never runs two for one conversation */
  readonly agents: AgentHost
  readonly agentEvents: EventEmitter<NodeAgentEvents>
  posted (conversation: string, entry: Entry): Promise<PostOutcome>
  /** a paired device's name (its key's start if unknown) */
  deviceName (device: string): string
}

/** Runs one CLI invocation; returns the exit code. Never throws. */
export async function runCli (argv: string[], io: CliIo, ctx: CliContext = {}): Promise<number> {
  // Every command's output, whoever wrote the text (the model, a tool, a peer), reaches the terminal as text only.
  const out = terminalSafeWriter(io.out)
  const err = terminalSafeWriter(io.err)
  try {
    return await runCommand(argv, { ...io, out: out.write, err: err.write }, ctx)
  } finally {
    out.flush()
    err.flush()
  }
}

async function runCommand (argv: string[], io: CliIo, ctx: CliContext): Promise<number> {
  let line: CommandLine
  try {
    line = parseCommandLine(argv)
  } catch (err) {
    if (!(err instanceof CliUsageError)) throw err
    io.err(`arbor: ${err.message}\n`)
    return err.exitCode
  }
  const { command, args, values } = line
  if (values.version === true) { io.out(`${ARBOR_VERSION}\n`); return 0 }
  if (values.help === true || command === undefined || command === 'help') { io.out(USAGE + '\n'); return command === undefined && values.help !== true ? 2 : 0 }
  const handler = COMMANDS[command]

  const dir = dataDir(values.data, io.env)
  if (ctx.store === undefined && !API_COMMANDS.has(command)) {
    // A node owns this data directory: the command runs there, its output comes back here
    // (transitional: the commands in API_COMMANDS speak the API to it instead).
    const remote = await forwardToNode(dir, argv, io).catch((err: Error) => { io.err(`arbor: the running node failed: ${err.message}\n`); return 1 })
    if (remote !== null) return remote
  }
  if (NODE_COMMANDS.has(command)) return runNodeCommand(command, args, values, io, ctx, dir)
  if (handler === undefined) return 2
  // Listing a cleanly closed store needs only its index: no Corestore to load or lock.
  if (command === 'ls' && ctx.store === undefined) {
    const index = await readSummaries(indexDir(dir)).catch(() => null)
    if (index?.clean === true) { printList(sortSummaries(index.conversations), values, io); return 0 }
  }
  let store = ctx.store
  try {
    if (store === undefined) {
      // Loaded on demand: the storage stack is most of the CLI's start-up time.
      const { HistoryStore } = await import('../history/history-store')
      store = new HistoryStore({ dir, watchPeers: false, log: consoleLogger('history') })
      await store.ready()
    }
    return (await handler(store, args, values, io, ctx)) ?? 0
  } catch (err) {
    const e = err as Error
    io.err(`arbor ${command}: ${e.message}\n`)
    if (io.env.ARBOR_DEBUG === '1' && e.stack !== undefined) io.err(e.stack + '\n')
    return err instanceof CliError ? err.exitCode : 1
  } finally {
    if (store !== undefined && store !== ctx.store) await store.close().catch((err: Error) => { io.err(`arbor: could not close the store cleanly: ${err.message}\n`) })
  }
}

const NODE_COMMANDS = new Set(['serve', 'invite', 'join', 'devices', 'forget', 'net'])
/** Commands that are clients of the node's API (over its socket, or in process); the others still run inside the node. */
const API_COMMANDS = new Set(['invite', 'join', 'forget', 'net'])

/** Pairing, devices and the network: carried out by the running node, or by one started for the command. */
async function runNodeCommand (command: string, args: string[], values: Values, io: CliIo, ctx: CliContext, dir: string): Promise<number> {
  const nc = await import('./node-commands')
  const o: NodeCommandOptions = { dir, ...(values.bootstrap !== undefined ? { bootstrap: values.bootstrap } : {}), ...(values.name !== undefined ? { name: values.name } : {}), ...(values.port !== undefined ? { port: values.port } : {}), ...(values.host !== undefined ? { host: values.host } : {}), ...(values.offline === true ? { offline: true } : {}) }
  let api: CliApi | undefined
  try {
    if (API_COMMANDS.has(command)) {
      const { inProcessApi, nodeApi } = await import('./api-session')
      // inside the node (its transitional `cli` method): its own API; else the running node's, if one runs
      const service = ctx.node?.apiService
      if (service !== undefined && service !== null) api = inProcessApi(service)
      else if (ctx.node === undefined) api = (await nodeApi(dir).catch((err: Error) => { throw new NodeLostError(err.message) })) ?? undefined
    }
    switch (command) {
      case 'serve':
        if (ctx.node !== undefined) throw new CliError(`a node is already serving ${dir}`)
        return await nc.serve(o, io)
      case 'invite': return await nc.invite(api, o, io)
      case 'join':
        need(args, 1, 'invite code: arbor join <code>')
        return await nc.join(api, args[0] as string, o, io)
      case 'devices': return await nc.devices(ctx.node, o, io, values.json === true)
      case 'forget':
        need(args, 1, 'device: arbor forget <device key prefix or name>')
        return await nc.forget(api, args[0] as string, o, io)
      default: return await nc.netSwitch(api, args[0], io)
    }
  } catch (err) {
    if (err instanceof NodeLostError) { io.err(`arbor: the running node failed: ${err.message}\n`); return 1 }
    const e = err as Error & { exitCode?: number }
    io.err(`arbor ${command}: ${e.message}\n`)
    if (io.env.ARBOR_DEBUG === '1' && e.stack !== undefined) io.err(e.stack + '\n')
    return e.exitCode ?? 1
  } finally {
    api?.close()
  }
}

/** Runs the command in the node serving this data directory; null if none runs. */
async function forwardToNode (dir: string, argv: string[], io: CliIo): Promise<number | null> {
  const { callNode } = await import('../api/local-socket-client')
  const reply = await callNode(dir, 'cli', { argv, cwd: io.cwd, env: io.env }, {
    onEvent: e => {
      const ev = e as { out?: string; err?: string }
      if (typeof ev.out === 'string') io.out(ev.out)
      if (typeof ev.err === 'string') io.err(ev.err)
    },
    ...(io.signal !== undefined ? { signal: io.signal } : {})
  })
  return reply === null ? null : Number(reply.result)
}


type Handler = (store: HistoryStore, args: string[], values: Values, io: CliIo, ctx: CliContext) => Promise<number | void>

function need (args: string[], n: number, what: string): void {
  if (args.length < n) throw new CliError(`missing ${what}; see \`arbor --help\``, 2)
}

/** An entry of a conversation named by id or unique prefix. */
function resolveEntry (dag: ConversationDag, ref: string): Entry {
  try {
    return entryByRef(dag, ref)
  } catch (err) {
    throw new CliError((err as Error).message)
  }
}

/** The branch to show: --leaf, else the device's selection, else the newest head. */
function branchOf (store: HistoryStore, dag: ConversationDag, leaf: string | undefined): Entry[] {
  if (leaf !== undefined) {
    const e = resolveEntry(dag, leaf)
    if (!dag.isJoined(e.id)) throw new CliError(`entry ${e.id.slice(0, 8)} waits for a parent that has not arrived; it is not on a branch yet`)
    return dag.branch(e.id)
  }
  return dag.branch(store.selected(dag.conversation))
}

const COMMANDS: Record<string, Handler> = {
  async chat (store, args, values, io, ctx) {
    const isNew = values.new === true
    need(args, isNew ? 1 : 2, isNew ? 'message: arbor chat --new <message>' : 'conversation and message: arbor chat <conv> <message> (or --new <message>)')
    if (values['no-sandbox'] === true && values.sandbox === true) throw new CliError('--sandbox and --no-sandbox contradict each other', 2)
    const message = (isNew ? args : args.slice(1)).join(' ')
    if (message.trim() === '') throw new CliError('the message is empty')
    const { chat, ChatError } = await import('./chat-command')
    try {
      return await chat(store, {
        ...(isNew ? {} : { conversation: args[0] as string }),
        newConversation: isNew,
        message,
        ...(values.provider !== undefined ? { provider: values.provider } : {}),
        ...(values.model !== undefined ? { model: values.model } : {}),
        ...(values['base-url'] !== undefined ? { baseURL: values['base-url'] } : {}),
        ...(values.script !== undefined ? { script: path.resolve(io.cwd, values.script) } : {}),
        ...(values.cwd !== undefined ? { cwd: path.resolve(io.cwd, values.cwd) } : {}),
        ...(values['no-sandbox'] === true ? { sandboxOff: true } : values.sandbox === true ? { sandboxOff: false } : {}),
        dataDir: store.dir,
        ...(ctx.node !== undefined ? { node: ctx.node } : {}),
        ...(ctx.secrets !== undefined ? { secrets: ctx.secrets } : {}),
        env: io.env,
        out: io.out,
        err: io.err,
        ...(io.signal !== undefined ? { signal: io.signal } : {})
      })
    } catch (err) {
      if (err instanceof ChatError) throw new CliError(err.message)
      throw err
    }
  },

  async resume (store, args, _values, io, ctx) {
    need(args, 1, 'conversation: arbor resume <conv>')
    if (ctx.node === undefined) throw new CliError('the agent runs inside this device\'s node: start it (`arbor serve` or the desktop app), then resume')
    const conversation = store.resolve(args[0] as string)
    const ref = await ctx.node.resume(conversation)
    io.out(`the agent of ${conversation.slice(0, 12)} now runs on this device (epoch ${ref.epoch})\n`)
  },

  async status (store, args, _values, io, ctx) {
    need(args, 1, 'conversation: arbor status <conv>')
    const conversation = store.resolve(args[0] as string)
    const dag = await store.open(conversation)
    const status = ctx.node === undefined ? null : await ctx.node.agentStatus(conversation)
    const name = ctx.node === undefined ? (d: string) => d.slice(0, 12) : (d: string) => (ctx.node as NodeCommands).deviceName(d)
    const { agentStatusText } = await import('./agent-status')
    io.out(agentStatusText({ dag, status, self: store.device, name, autoRevival: store.summary(conversation)?.autoRevival === true }))
  },

  async new (store, _args, values, io) {
    let cwd: string | undefined
    if (values.cwd !== undefined) {
      cwd = path.resolve(io.cwd, values.cwd)
      if (!fs.existsSync(cwd) || !fs.statSync(cwd).isDirectory()) throw new CliError(`--cwd ${values.cwd}: not a directory`)
    }
    const root = await store.createConversation({ title: values.title ?? '', ...(cwd !== undefined ? { cwd } : {}), ...(values['auto-revival'] === true ? { autoRevival: true } : {}) })
    store.select(root.id, root.id)
    io.out(root.id + '\n')
  },

  async post (store, args, values, io) {
    need(args, 2, 'conversation and text: arbor post <conv> <text>')
    const dag = await store.open(args[0] as string)
    const text = args.slice(1).join(' ')
    if (text.trim() === '') throw new CliError('the message is empty')
    let parent: Entry
    if (values.parent !== undefined) {
      parent = resolveEntry(dag, values.parent)
      if (!dag.isJoined(parent.id)) throw new CliError(`entry ${parent.id.slice(0, 8)} waits for a parent that has not arrived; continue from another entry`)
    } else {
      const branch = branchOf(store, dag, undefined)
      parent = branch[branch.length - 1] as Entry
    }
    const [entry] = await store.append(dag.conversation, [{ kind: 'user', body: { text, reply: false }, parents: [parent.id] }])
    store.select(dag.conversation, (entry as Entry).id)
    io.out((entry as Entry).id + '\n')
  },

  async ls (store, _args, values, io) {
    printList(store.list(), values, io)
  },

  async tree (store, args, _values, io) {
    need(args, 1, 'conversation: arbor tree <conv>')
    const dag = await store.open(args[0] as string)
    const branch = new Set(branchOf(store, dag, undefined).map(e => e.id))
    const { asciiTree } = await import('./ascii-tree')
    io.out(asciiTree(dag, { branch, device: store.device }))
  },

  async show (store, args, values, io) {
    need(args, 1, 'conversation: arbor show <conv>')
    const dag = await store.open(args[0] as string)
    const { transcriptText } = await import('../../shared/conversation-export')
    io.out(transcriptText(branchOf(store, dag, values.leaf)))
  },

  async export (store, args, values, io) {
    need(args, 1, 'conversation: arbor export <conv> --format md|json')
    const dag = await store.open(args[0] as string)
    const { conversationJson, transcriptMarkdown } = await import('../../shared/conversation-export')
    if (values.format === 'json') io.out(terminalJson(conversationJson(dag)) + '\n')
    else if (values.format === 'md') io.out(transcriptMarkdown(dag, branchOf(store, dag, values.leaf)))
    else throw new CliError('--format must be md or json', 2)
  }
}

function printList (list: ConversationSummary[], values: Values, io: CliIo): void {
  if (values.json === true) { io.out(terminalJson(list) + '\n'); return }
  if (list.length === 0) { io.out('no conversations yet; start one with `arbor new --title "..."`\n'); return }
  // 10,000 rows: columns built once, each line once, one write (no table of arrays of cells)
  const now = Date.now()
  const days = new Map<number, string>() // 10,000 rows fall on a few hundred days: each date formatted once
  const columns = [['UPDATED'], ['ENTRIES'], ['BRANCHES']] as [string[], string[], string[]]
  for (const c of list) {
    columns[0].push(ago(c.updatedAt, now, days))
    columns[1].push(String(c.size))
    columns[2].push(String(c.heads.length))
  }
  const widths = columns.map(col => col.reduce((w, cell) => Math.max(w, cell.length), 0))
  const lines = new Array<string>(list.length + 1)
  for (let r = 0; r <= list.length; r++) {
    const c = list[r - 1]
    const id = c === undefined ? 'ID' : c.id.slice(0, 12)
    const title = c === undefined ? 'TITLE' : c.title || '(untitled)'
    lines[r] = id.padEnd(12) + '  ' + (columns[0][r] as string).padEnd(widths[0] as number) + '  ' + (columns[1][r] as string).padEnd(widths[1] as number) + '  ' + (columns[2][r] as string).padEnd(widths[2] as number) + '  ' + title
  }
  io.out(lines.join('\n') + '\n')
}

function ago (ts: number, now: number, days?: Map<number, string>): string {
  const s = Math.max(0, Math.round((now - ts) / 1000))
  if (s < 60) return `${s}s ago`
  if (s < 3600) return `${Math.floor(s / 60)}m ago`
  if (s < 86400) return `${Math.floor(s / 3600)}h ago`
  const day = Math.floor(ts / 86_400_000)
  let date = days?.get(day)
  if (date === undefined) { date = new Date(ts).toISOString().slice(0, 10); days?.set(day, date) }
  return date
}
