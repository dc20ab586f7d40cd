import fs from 'node:fs'
import path from 'node:path'
import type { ConversationDag } from '../../shared/conversation/conversation-dag'
import type { ConversationSummaryDto } from '../../shared/api/api'
import type { Entry } from '../../shared/entry/entry'
import { ARBOR_VERSION } from '../../shared/app-version'
import { indexDir, readListing, type ConversationSummary } from '../history/index/history-index'
import { summaryRows, type ListRows } from '../history/index/index-listing'
import { writeListText } from './conversation-list'
import type { NodeCommandOptions } from './node-commands'
import type { CliIo } from './cli-io'
import type { CliApi } from './api-session'
import type { ApiService } from '../api/api-service'
import { NodeLostError } from './node-lost'
import { CliUsageError, parseCommandLine, type CliValues, type CommandLine } from './cli-options'
import { dataDir } from '../disk/data-dir'
import { nodeMaySocket } from '../api/socket-path'
import { oneLine, terminalJson, terminalSafeWriter } from './terminal-text'
// Only what `ls` needs is imported here; every other command imports its modules when it runs
// (the entry schema alone, zod, takes longer to load than listing 10,000 conversations).

/** An error meant for the user: printed as one line, exit code 1 (2 for usage). */
export class CliError extends Error {
  constructor (message: string, readonly exitCode = 1) {
    super(message)
    this.name = 'CliError'
  }
}

const USAGE = `usage: arbor <command> [options]

  new [--title T] [--cwd DIR] [--auto-revival]
                                        start a conversation; prints its id (--cwd: where this device's
                                        agent works, default the Settings' default directory, else a
                                        workspace of its own; --auto-revival: if the device running
                                        its agent dies, a live one takes it over)
  post <conv> <text> [--parent ID]      add a message to the history without asking the agent
                                        (a new branch if ID is not a tip); chat asks it
  ls [--json]                           list conversations, most recent first
  tree <conv>                           the conversation's branches as a tree
  name <conv> <ID> [name]               name the branch starting at entry ID for every device (the
                                        tree shows it); without a name, the name is taken away
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
       [--script FILE] [--context-window TOKENS] [--cwd DIR] [--no-sandbox | --sandbox]
       [--max-steps N] [--token-budget TOKENS]
                                        send a message and run the agent to the end of its turn
                                        (queued if the agent here is busy; --cwd on a conversation
                                        moves where this device's agent works from then on;
                                        --max-steps: model steps per turn, --token-budget: tokens
                                        of this device's steps in the conversation; 0 clears one)
  resume <conv>                         run the conversation's agent on this device from now on
                                        (refused, saying why, when there is nothing to move)
  status <conv>                         where its agent runs, its epoch, and how it moved
  compact <conv> [focus]                summarise the branch before its latest message, so the
                                        model's context holds more (focus: what the summary keeps)
  retry <conv> [ID] [--model M]         answer again: this device's agent runs from what the reply ID
                                        (default: the shown branch's last) answered, as a new branch
                                        (--model: another model of this device's provider, this once)
  fork <conv> [ID] [--title T]          a new conversation holding a copy of the branch up to ID
                                        (default: the shown branch's tip); prints its id
  import <file> [--format pi|claude-code|auto]
                                        a Pi or Claude Code session (JSONL) as a new conversation;
                                        prints its id (its tool calls are history: never run)
  search <text> [--json] [--limit N]    entries of every conversation and branch with all the words
                                        (the last one as a prefix), newest first: conversation, entry,
                                        title, excerpt (\`arbor show <conv> --leaf <entry>\` shows it)

  Each command takes only the options shown beside it (and --data).
  <conv> is a conversation id or any unique prefix of it; ID an entry id or prefix.
  --data DIR (or ARBOR_DATA) picks the data directory; --bootstrap (or ARBOR_BOOTSTRAP)
  a private DHT instead of the public one. While \`arbor serve\` runs, every command goes through it.`

type Values = CliValues

/** What runs the commands when not the node serving the data directory: a node in this process (tests). */
export interface CliContext {
  /** the API of a node in this process: the commands are its clients */
  api?: ApiService
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
  if (handler === undefined) return 2
  const dir = dataDir(values.data, io.env)
  let session: Promise<CliApi> | undefined
  // The node's API for this command, opened when the command first needs it (after its own checks).
  const api = (network?: { bootstrap?: string; name?: string }): Promise<CliApi> => {
    session ??= import('./api-session').then(({ openSession }) => openSession({
      dir,
      env: io.env,
      ...(ctx.api !== undefined ? { api: ctx.api } : {}),
      ...(network !== undefined ? { network } : {})
    }))
    return session
  }
  // The node that runs here (or the one lent), if any: no node is opened for the command.
  const running = async (): Promise<CliApi | null> => {
    if (ctx.api !== undefined) return api()
    if (!nodeMaySocket(dir)) return null // no socket file: nothing to connect to (and node:net stays unloaded)
    const { nodeApi } = await import('./api-session')
    const a = await nodeApi(dir).catch((err: Error) => { throw new NodeLostError(err.message) })
    if (a !== null) session = Promise.resolve(a)
    return a
  }
  try {
    return (await handler({ args, values, io, dir, api, running, ctx })) ?? 0
  } catch (err) {
    if (err instanceof NodeLostError) { io.err(`arbor: the running node failed: ${err.message}\n`); return 1 }
    const e = err as Error & { exitCode?: number }
    io.err(`arbor ${command}: ${e.message}\n`)
    if (io.env.ARBOR_DEBUG === '1' && e.stack !== undefined) io.err(e.stack + '\n')
    return e.exitCode ?? 1
  } finally {
    const opened = await session?.catch(() => undefined)
    await opened?.close().catch((err: Error) => { io.err(`arbor: could not close the node cleanly: ${err.message}\n`) })
  }
}

interface Command {
  args: string[]
  values: Values
  io: CliIo
  dir: string
  /** the node's API: the running node's, else one opened for this command (with the network for invite and join) */
  api: (network?: { bootstrap?: string; name?: string }) => Promise<CliApi>
  /** the API of the node that runs here; null (and none opened) when none does */
  running: () => Promise<CliApi | null>
  ctx: CliContext
}

type Handler = (c: Command) => Promise<number | void>

function need (args: string[], n: number, what: string): void {
  if (args.length < n) throw new CliError(`missing ${what}; see \`arbor --help\``, 2)
}

/** A conversation id or prefix as the API takes it; one it cannot be gets the words the history has for it. */
async function conversationRef (ref: string): Promise<string> {
  if (/^[0-9a-f]{1,64}$/i.test(ref)) return ref
  const { ConversationNotFoundError } = await import('../history/conversation-not-found')
  throw new ConversationNotFoundError(ref, /^[0-9a-f]+$/i.test(ref) ? undefined : 'no conversation (ids are hex)')
}

/** An entry of a conversation named by id or unique prefix. */
async function resolveEntry (dag: ConversationDag, ref: string): Promise<Entry> {
  const { entryByRef } = await import('../../shared/entry/entry-ref')
  try {
    return entryByRef(dag, ref)
  } catch (err) {
    throw new CliError((err as Error).message)
  }
}

/** A conversation as the node holds it (every entry, waiting ones too), and the entry this device looks at. */
async function openConversation (api: CliApi, ref: string): Promise<{ dag: ConversationDag; selected: string | undefined }> {
  const dto = await api.call('conversation.open', { id: await conversationRef(ref) })
  const { conversationDag } = await import('../../shared/conversation/conversation-export')
  return { dag: conversationDag(dto), selected: dto.selected }
}

/** The branch to show: --leaf, else the device's selection, else the newest head. */
async function branchOf (dag: ConversationDag, selected: string | undefined, leaf: string | undefined): Promise<Entry[]> {
  if (leaf !== undefined) {
    const e = await resolveEntry(dag, leaf)
    if (!dag.isJoined(e.id)) throw new CliError(`entry ${e.id.slice(0, 8)} waits for a parent that has not arrived; it is not on a branch yet`)
    return dag.branch(e.id)
  }
  return dag.branch(selected)
}

/** Pairing, devices, the network and serving: node-commands.ts. */
async function nodeCommand (c: Command, command: 'serve' | 'invite' | 'join' | 'devices' | 'forget' | 'net'): Promise<number> {
  const nc = await import('./node-commands')
  const { values, args, io, dir } = c
  const o: NodeCommandOptions = { dir, ...(values.bootstrap !== undefined ? { bootstrap: values.bootstrap } : {}), ...(values.name !== undefined ? { name: values.name } : {}), ...(values.port !== undefined ? { port: values.port } : {}), ...(values.host !== undefined ? { host: values.host } : {}), ...(values.offline === true ? { offline: true } : {}) }
  const network = { ...(o.bootstrap !== undefined ? { bootstrap: o.bootstrap } : {}), ...(o.name !== undefined ? { name: o.name } : {}) }
  switch (command) {
    case 'serve': return nc.serve(o, io)
    case 'invite': return nc.invite(await c.api(network), io)
    case 'join':
      need(args, 1, 'invite code: arbor join <code>')
      return nc.join(await c.api(network), args[0] as string, io)
    case 'devices': return nc.devices(await c.api(), io, values.json === true)
    case 'forget':
      need(args, 1, 'device: arbor forget <device key prefix or name>')
      return nc.forget(await c.api(), args[0] as string, io)
    case 'net': return nc.netSwitch(args[0], c.running, io)
  }
}

const COMMANDS: Record<string, Handler> = {
  // ---------------------------------------------------------------- search
  async search ({ args, values, io, api }) {
    need(args, 1, 'words: arbor search <text>')
    const text = args.join(' ')
    if (text.trim() === '') throw new CliError('the search text is empty', 2)
    const limit = values.limit === undefined ? 20 : Number(values.limit)
    if (!Number.isSafeInteger(limit) || limit < 1 || limit > 200) throw new CliError('--limit must be a whole number from 1 to 200', 2)
    const { hits } = await (await api()).call('search.query', { text, limit })
    if (values.json === true) { io.out(terminalJson(hits) + '\n'); return }
    if (hits.length === 0) { io.out(`no entry matches "${oneLine(text)}"\n`); return }
    for (const h of hits) io.out(`${h.conversation.slice(0, 8)}  ${h.entry.slice(0, 8)}  ${oneLine(h.title) || '(untitled)'}: ${oneLine(h.snippet)}\n`)
  },

  serve: c => nodeCommand(c, 'serve'),
  invite: c => nodeCommand(c, 'invite'),
  join: c => nodeCommand(c, 'join'),
  devices: c => nodeCommand(c, 'devices'),
  forget: c => nodeCommand(c, 'forget'),
  net: c => nodeCommand(c, 'net'),

  async chat ({ args, values, io, api }) {
    const isNew = values.new === true
    need(args, isNew ? 1 : 2, isNew ? 'message: arbor chat --new <message>' : 'conversation and message: arbor chat <conv> <message> (or --new <message>)')
    if (values['no-sandbox'] === true && values.sandbox === true) throw new CliError('--sandbox and --no-sandbox contradict each other', 2)
    const message = (isNew ? args : args.slice(1)).join(' ')
    if (message.trim() === '') throw new CliError('the message is empty')
    const conversation = isNew ? undefined : await conversationRef(args[0] as string)
    const window = values['context-window'] === undefined ? undefined : Number(values['context-window'])
    if (window !== undefined && (!Number.isSafeInteger(window) || window <= 0)) throw new CliError('--context-window must be a whole number of tokens', 2)
    const limits: { maxSteps?: number; tokenBudget?: number } = {}
    for (const [flag, k] of [['max-steps', 'maxSteps'], ['token-budget', 'tokenBudget']] as const) {
      const v = values[flag]
      if (v === undefined) continue
      const n = Number(v)
      if (!Number.isSafeInteger(n) || n < 0) throw new CliError(`--${flag} must be a whole number (0 clears it)`, 2)
      limits[k] = n
    }
    let cwd: string | undefined
    if (values.cwd !== undefined) cwd = path.resolve(io.cwd, values.cwd)
    const { chat } = await import('./chat-command')
    return chat(await api(), {
      ...(conversation !== undefined ? { conversation } : {}),
      message,
      llm: {
        ...(values.provider !== undefined ? { provider: values.provider } : {}),
        ...(values.model !== undefined ? { model: values.model } : {}),
        ...(values['base-url'] !== undefined ? { baseURL: values['base-url'] } : {}),
        ...(values.script !== undefined ? { script: path.resolve(io.cwd, values.script) } : {}),
        ...(window !== undefined ? { contextWindow: window } : {})
      },
      ...(cwd !== undefined ? { cwd } : {}),
      ...(Object.keys(limits).length > 0 ? { limits } : {}),
      ...(values['no-sandbox'] === true ? { sandbox: false } : values.sandbox === true ? { sandbox: true } : {}),
      out: io.out,
      err: io.err,
      ...(io.signal !== undefined ? { signal: io.signal } : {})
    })
  },

  async resume ({ args, io, api }) {
    need(args, 1, 'conversation: arbor resume <conv>')
    const ref = await conversationRef(args[0] as string)
    const a = await api()
    if (!a.live) throw new CliError('the agent runs inside this device\'s node: start it (`arbor serve` or the desktop app), then resume')
    const { conversation } = await a.call('agent.status', { conversation: ref }) // the full id, for the words below
    const moved = await a.call('agent.resume', { conversation })
    io.out(`the agent of ${conversation.slice(0, 12)} now runs on this device (epoch ${moved.epoch})\n`)
  },

  async compact ({ args, io, api }) {
    need(args, 1, 'conversation: arbor compact <conv> [focus]')
    const conversation = await conversationRef(args[0] as string)
    const focus = args.slice(1).join(' ').trim()
    const { entry, window } = await (await api()).call('conversation.compact', { conversation, ...(focus !== '' ? { focus } : {}) })
    const body = entry.kind === 'compaction' ? entry.body : undefined
    io.out(`compacted ${entry.conversation.slice(0, 12)}: its context (about ${body?.tokens ?? 0} tokens of a ${window}-token window) now starts from a summary, entry ${entry.id.slice(0, 8)}; the history keeps every entry\n`)
  },

  async status ({ args, io, api }) {
    need(args, 1, 'conversation: arbor status <conv>')
    const ref = await conversationRef(args[0] as string) // a reference that cannot name one opens no node
    const a = await api()
    const { dag } = await openConversation(a, ref)
    const [status, hello] = await Promise.all([a.call('agent.status', { conversation: dag.conversation }), a.call('hello', {})])
    const { agentStatusText } = await import('./agent-status')
    io.out(agentStatusText({ entries: [...dag.entries()], status, live: a.live, self: hello.device }))
  },

  async new ({ values, io, api }) {
    let cwd: string | undefined
    if (values.cwd !== undefined) {
      cwd = path.resolve(io.cwd, values.cwd)
      if (!fs.existsSync(cwd) || !fs.statSync(cwd).isDirectory()) throw new CliError(`--cwd ${values.cwd}: not a directory`)
    }
    const made = await (await api()).call('conversation.create', { title: values.title ?? '', ...(cwd !== undefined ? { cwd } : {}), ...(values['auto-revival'] === true ? { autoRevival: true } : {}) })
    io.out(made.id + '\n')
  },

  async post ({ args, values, io, api }) {
    need(args, 2, 'conversation and text: arbor post <conv> <text>')
    const conversation = await conversationRef(args[0] as string)
    const text = args.slice(1).join(' ')
    if (text.trim() === '') throw new CliError('the message is empty')
    const a = await api()
    let parent = values.parent
    // a parent no entry id can start with: the words a lookup in the conversation has for it
    if (parent !== undefined && !/^[0-9a-f]{1,64}$/i.test(parent)) parent = (await resolveEntry((await openConversation(a, conversation)).dag, parent)).id
    const { entry } = await a.call('message.post', { conversation, text, ...(parent !== undefined ? { parent } : {}) })
    io.out(entry.id + '\n')
  },

  async ls ({ values, io, dir, api, running }) {
    const a = await running()
    if (a === null) {
      // No node runs here and the store was closed cleanly: its index alone says it all (no node
      // opened, no package loaded). The table from the snapshot's listing; --json needs every field.
      if (values.json === true) {
        const { readSummaries, sortSummaries } = await import('../history/index/history-index')
        const index = await readSummaries(indexDir(dir)).catch(() => null)
        if (index?.clean === true) { printJson(sortSummaries(index.conversations), io); return }
      } else {
        const index = await readListing(indexDir(dir)).catch(() => null)
        if (index?.clean === true) { printList(index.rows, io); return }
      }
    }
    const list = asSummaries(await (a ?? await api()).call('conversations.list', {}))
    if (values.json === true) printJson(list, io)
    else printList(summaryRows(list), io)
  },

  async tree ({ args, io, api }) {
    need(args, 1, 'conversation: arbor tree <conv>')
    const ref = await conversationRef(args[0] as string)
    const a = await api()
    const { dag, selected } = await openConversation(a, ref)
    const branch = new Set((await branchOf(dag, selected, undefined)).map(e => e.id))
    const { device } = await a.call('hello', {})
    const { asciiTree } = await import('./ascii-tree')
    io.out(asciiTree(dag, { branch, device }))
  },

  async name ({ args, io, api }) {
    need(args, 2, 'conversation and entry: arbor name <conv> <ID> [name]')
    const ref = await conversationRef(args[0] as string)
    const a = await api()
    const { dag } = await openConversation(a, ref)
    const entry = await resolveEntry(dag, args[1] as string)
    const name = args.slice(2).join(' ')
    await a.call('branch.name', { conversation: dag.conversation, entry: entry.id, name })
    io.err(name.trim() === '' ? `the branch at ${entry.id.slice(0, 8)} has no name now\n` : `named the branch at ${entry.id.slice(0, 8)}\n`)
  },

  async show ({ args, values, io, api }) {
    need(args, 1, 'conversation: arbor show <conv>')
    const ref = await conversationRef(args[0] as string)
    const { dag, selected } = await openConversation(await api(), ref)
    const { transcriptText } = await import('../../shared/conversation/conversation-export')
    io.out(transcriptText(await branchOf(dag, selected, values.leaf)))
  },

  async export ({ args, values, io, api }) {
    need(args, 1, 'conversation: arbor export <conv> --format md|json')
    const ref = await conversationRef(args[0] as string)
    if (values.format !== 'json' && values.format !== 'md') {
      // the conversation is named first: a wrong one is the first thing to say
      await openConversation(await api(), ref)
      throw new CliError('--format must be md or json', 2)
    }
    const { dag, selected } = await openConversation(await api(), ref)
    const { conversationJson, transcriptMarkdown } = await import('../../shared/conversation/conversation-export')
    if (values.format === 'json') io.out(terminalJson(conversationJson(dag)) + '\n')
    else io.out(transcriptMarkdown(dag, await branchOf(dag, selected, values.leaf)))
  },

  // ---- retry and fork: a reply answered again as a sibling branch; a branch copied into a new conversation
  async retry ({ args, values, io, api }) {
    need(args, 1, 'conversation: arbor retry <conv> [entry] [--model M]')
    const ref = await conversationRef(args[0] as string)
    const a = await api()
    const { dag, selected } = await openConversation(a, ref)
    let reply = args[1]
    if (reply === undefined) {
      const { lastReply } = await import('../../shared/conversation/retry-point')
      reply = lastReply(await branchOf(dag, selected, undefined))?.id
      if (reply === undefined) throw new CliError('there is no assistant reply on the branch shown to retry; name one (`arbor tree` shows the ids)')
    }
    const entry = reply
    const conversation = dag.conversation
    const { followTurn } = await import('./chat-command')
    return followTurn(a, conversation, io, async () => {
      const r = await a.call('message.retry', { conversation, entry, ...(values.model !== undefined ? { model: values.model } : {}) })
      io.err(`retrying ${r.reply.slice(0, 8)}: a new branch after ${r.from.slice(0, 8)}${values.model !== undefined ? `, with ${values.model}` : ''}\n`)
      return { from: r.from }
    })
  },

  async fork ({ args, values, io, api }) {
    need(args, 1, 'conversation: arbor fork <conv> [entry] [--title T]')
    const ref = await conversationRef(args[0] as string)
    const a = await api()
    let entry = args[1]
    let conversation = ref
    if (entry === undefined) {
      const { dag, selected } = await openConversation(a, ref)
      conversation = dag.conversation
      entry = (await branchOf(dag, selected, undefined)).at(-1)?.id
      if (entry === undefined) throw new CliError('the conversation has no entries here yet')
    }
    const made = await a.call('conversation.fork', { conversation, entry, ...(values.title !== undefined ? { title: values.title } : {}) })
    io.out(made.id + '\n')
  },

  // ---------------------------------------------------------------- import (issue 15)
  async import ({ args, values, io, api }) {
    need(args, 1, 'file: arbor import <file> [--format pi|claude-code|auto]')
    const format = values.format ?? 'auto'
    if (format !== 'pi' && format !== 'claude-code' && format !== 'auto') throw new CliError('--format must be pi, claude-code or auto', 2)
    const file = path.resolve(io.cwd, args[0] as string)
    const { importTooLarge, MAX_IMPORT_CHARS } = await import('../../shared/api/import-limit')
    const stat = fs.statSync(file, { throwIfNoEntry: false })
    if (stat === undefined || !stat.isFile()) throw new CliError(`${args[0] as string}: no such file`)
    // a file past the limit even at 4 bytes a character is refused unread (its size in bytes said)
    const large = stat.size > 4 * MAX_IMPORT_CHARS ? importTooLarge(stat.size, args[0]) : undefined
    const text = large === undefined ? fs.readFileSync(file, 'utf8') : ''
    const refused = large ?? importTooLarge(text.length, args[0])
    if (refused !== undefined) throw new CliError(refused)
    const made = await (await api()).call('conversation.import', { format, text })
    for (const p of made.problems) io.err(`arbor import: ${p}\n`)
    io.err(`imported ${made.entries} entries of a ${made.format === 'pi' ? 'Pi' : 'Claude Code'} session\n`)
    io.out(made.id + '\n')
  }
}

/** The listing as the index keeps it (`ls --json` prints these fields, in this order). */
function asSummaries (list: ConversationSummaryDto[]): ConversationSummary[] {
  return list.map(c => ({
    id: c.id, title: c.title, createdAt: c.createdAt, updatedAt: c.updatedAt, heads: c.tips ?? [], size: c.size, waiting: c.waiting,
    ...(c.cwd !== undefined ? { cwd: c.cwd } : {}), ...(c.autoRevival !== undefined ? { autoRevival: c.autoRevival } : {})
  }))
}

function printJson (list: ConversationSummary[], io: CliIo): void {
  io.out(terminalJson(list) + '\n')
}

function printList (rows: ListRows, io: CliIo): void {
  if (rows.length === 0) { io.out('no conversations yet; start one with `arbor new --title "..."`\n'); return }
  writeListText(rows, Date.now(), io.out)
}
