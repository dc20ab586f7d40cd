import { parseArgs, type ParseArgsConfig } from 'node:util'

// The `arbor` command line's options, and which command takes which: one table, one parser.
// An option a command does not take is an error that lists the ones it does, never ignored
// (`arbor serve --provider fake` would otherwise serve with the stored provider in silence).

export const OPTIONS = {
  data: { type: 'string' },
  title: { type: 'string' },
  cwd: { type: 'string' },
  parent: { type: 'string' },
  leaf: { type: 'string' },
  format: { type: 'string' },
  json: { type: 'boolean' },
  bootstrap: { type: 'string' },
  name: { type: 'string' },
  port: { type: 'string' },
  host: { type: 'string' },
  new: { type: 'boolean' },
  provider: { type: 'string' },
  model: { type: 'string' },
  'base-url': { type: 'string' },
  script: { type: 'string' },
  'context-window': { type: 'string' },
  'max-steps': { type: 'string' },
  'token-budget': { type: 'string' },
  'no-sandbox': { type: 'boolean' },
  'auto-revival': { type: 'boolean' },
  offline: { type: 'boolean' },
  sandbox: { type: 'boolean' },
  limit: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
  version: { type: 'boolean', short: 'v' }
} satisfies ParseArgsConfig['options']

export type OptionName = keyof typeof OPTIONS
export type CliValues = { [K in OptionName]?: typeof OPTIONS[K]['type'] extends 'boolean' ? boolean : string }

/** Options every command takes. */
const COMMON: readonly OptionName[] = ['data', 'help', 'version']

/** Each command's own options (besides COMMON). */
export const COMMAND_OPTIONS = {
  new: ['title', 'cwd', 'auto-revival'],
  post: ['parent'],
  ls: ['json'],
  tree: [],
  name: [],
  show: ['leaf'],
  export: ['format', 'leaf'],
  serve: ['bootstrap', 'name', 'port', 'host', 'offline'],
  // without a running node these two start one for the command: it needs the DHT and may be named
  invite: ['bootstrap', 'name'],
  join: ['bootstrap', 'name'],
  devices: ['json'],
  forget: [],
  net: [],
  chat: ['new', 'provider', 'model', 'base-url', 'script', 'context-window', 'cwd', 'no-sandbox', 'sandbox', 'max-steps', 'token-budget'],
  resume: [],
  compact: [],
  status: [],
  retry: ['model'],
  fork: ['title'],
  import: ['format'],
  search: ['json', 'limit'],
  help: []
} as const satisfies Record<string, readonly OptionName[]>

export type CommandName = keyof typeof COMMAND_OPTIONS

export function isCommand (name: string): name is CommandName {
  return Object.hasOwn(COMMAND_OPTIONS, name)
}

/** A mistake on the command line: one line for the user, exit code 2. */
export class CliUsageError extends Error {
  readonly exitCode = 2
  constructor (message: string) {
    super(message)
    this.name = 'CliUsageError'
  }
}

export interface CommandLine {
  /** undefined when argv names none (`arbor`, `arbor --help`) */
  command: CommandName | undefined
  args: string[]
  values: CliValues
}

/** Parses argv: the command, its arguments and options; throws CliUsageError for an unknown command or an option it does not take. Pure. */
export function parseCommandLine (argv: string[]): CommandLine {
  let parsed: { values: Record<string, unknown>; positionals: string[]; tokens: Array<{ kind: string; name?: string; rawName?: string }> }
  try {
    parsed = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true, tokens: true })
  } catch (err) {
    throw new CliUsageError(`${(err as Error).message.split('\n')[0]}; see \`arbor --help\``)
  }
  const [command, ...args] = parsed.positionals
  const values = parsed.values as CliValues
  if (command === undefined) return { command, args, values }
  if (!isCommand(command)) throw new CliUsageError(`unknown command "${command}"; see \`arbor --help\``)
  const allowed = new Set<OptionName>([...COMMON, ...COMMAND_OPTIONS[command]])
  for (const t of parsed.tokens) {
    if (t.kind !== 'option' || allowed.has(t.name as OptionName)) continue
    throw new CliUsageError(`${t.rawName ?? `--${t.name ?? ''}`} is not an option of \`arbor ${command}\`; it takes ${optionsText(command)}`)
  }
  return { command, args, values }
}

/** "--title, --cwd, --auto-revival (and --data)": what a command takes, for its error message. */
export function optionsText (command: CommandName): string {
  const own: readonly OptionName[] = COMMAND_OPTIONS[command]
  return own.length === 0 ? 'no options but --data' : `${own.map(o => `--${o}`).join(', ')} (and --data)`
}
