// The params of every API request, typed once: these zod schemas check what a node receives
// (ApiService), and ApiMethods in api.ts infers the params' TypeScript types from them.
// Pure (no node:*): the renderer imports only the types, the node runs the checks.
import { z } from 'zod'
import { BRANCH_NAME_MAX } from '../conversation/branch-name'
import { HEX32 } from '../entry/hex32'
import { MAX_IMPORT_CHARS } from './import-limit'

/** Longest user message accepted (entries are capped at 1 MiB encoded). */
export const MAX_MESSAGE_CHARS = 200_000

/** A path that is absolute where the node runs (Windows forms only on Windows). */
export function isAbsolutePath (p: string): boolean {
  if (p.startsWith('/')) return true
  const windows = typeof process === 'object' && process.platform === 'win32'
  return windows && (/^[A-Za-z]:[\\/]/.test(p) || p.startsWith('\\\\'))
}

const none = z.strictObject({})
const ref = z.string().trim().min(1, 'is empty').max(64).regex(/^[0-9a-fA-F]+$/, 'must be a hex id (or a prefix of one)')
const entryId = z.string().regex(HEX32, 'must be an entry id (64 lower-case hex characters)')
const absolutePath = z.string().min(1).max(4096).refine(isAbsolutePath, 'must be an absolute path')
const messageText = z.string().max(MAX_MESSAGE_CHARS, `is longer than ${MAX_MESSAGE_CHARS} characters`).refine(t => t.trim() !== '', 'is empty')
/** '' clears a setting (JSON has no undefined) */
const orClear = <T extends z.ZodType>(t: T) => z.union([t, z.literal('')])

export const API_PARAMS = {
  hello: none,
  'conversations.list': z.strictObject({ query: z.string().max(1000).optional() }),
  // tail: only the end of the shown branch (at least this many entries, from a user message), what a view draws first
  'conversation.open': z.strictObject({ id: ref, tail: z.number().int().min(1).max(1_000_000).optional() }),
  'conversation.create': z.strictObject({
    title: z.string().max(1000).optional(),
    cwd: absolutePath.optional(),
    model: z.string().min(1).max(200).optional(),
    autoRevival: z.boolean().optional()
  }),
  'conversation.select': z.strictObject({ id: ref, entry: entryId }),
  'message.send': z.strictObject({ conversation: ref, text: messageText, parent: entryId.optional() }),
  /** message.send at the selected branch's tip, except while the agent here is busy: then it waits for the end of its run */
  'message.queue': z.strictObject({ conversation: ref, text: messageText }),
  /** a user message for the history only: no agent is asked (`arbor post`); `parent` may be a prefix */
  'message.post': z.strictObject({ conversation: ref, text: messageText, parent: ref.optional() }),
  /** summarise the shown branch before its latest message (`/compact [focus]`, `arbor compact`) */
  'conversation.compact': z.strictObject({ conversation: ref, focus: z.string().max(2000).optional() }),
  'conversation.window': z.strictObject({ conversation: ref }),
  'agent.cancel': z.strictObject({ conversation: ref }),
  'agent.resume': z.strictObject({ conversation: ref }),
  'agent.status': z.strictObject({ conversation: ref }),
  /** the limits this device's agent of the conversation runs under, and what its budget has spent */
  'agent.limits': z.strictObject({ conversation: ref }),
  /** `arbor chat --provider … --model … --base-url … --script … --sandbox|--no-sandbox`; the provider's own words refuse a bad one */
  'agent.configure': z.strictObject({
    conversation: ref,
    llm: z.strictObject({
      provider: z.string().min(1).max(100).optional(),
      model: z.string().min(1).max(200).optional(),
      baseURL: z.string().min(1).max(2000).optional(),
      script: absolutePath.optional(),
      contextWindow: z.number().int().positive().max(100_000_000).optional()
    }).optional(),
    sandbox: z.boolean().optional(),
    /** where this device's agent of the conversation works from now on (`arbor chat --cwd`) */
    cwd: absolutePath.optional(),
    /** this device's limits for the conversation (`arbor chat --max-steps N --token-budget N`); 0 clears one */
    limits: z.strictObject({
      maxSteps: z.number().int().min(0).max(1_000_000).optional(),
      tokenBudget: z.number().int().min(0).max(1e15).optional()
    }).optional()
  }),
  'agent.autoRevival': z.strictObject({ conversation: ref, on: z.boolean() }),
  'devices.list': none,
  'devices.invite': none,
  'devices.join': z.strictObject({ code: z.string().trim().min(1, 'is empty').max(1000) }),
  /** `device`: a key prefix or a name */
  'devices.forget': z.strictObject({ device: z.string().trim().min(1, 'is empty').max(200) }),
  'net.get': none,
  'net.set': z.strictObject({ on: z.boolean() }),
  'settings.get': none,
  'settings.set': z.strictObject({
    provider: z.enum(['openai', 'fake']).optional(),
    baseURL: orClear(z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }).max(2000)).optional(),
    model: orClear(z.string().max(200)).optional(),
    apiKey: orClear(z.string().max(4096)).optional(),
    defaultCwd: orClear(absolutePath).optional(),
    /** the model's context window in tokens, where the server does not say it (0 clears it) */
    contextWindow: z.number().int().min(0).max(100_000_000).optional(),
    /** model steps per turn before the agent stops (0: the default) */
    maxSteps: z.number().int().min(0).max(1_000_000).optional()
  }),
  'settings.detect': none,
  /** runs this device's agent again from what the reply `entry` (an id or prefix) answered; `model`: another model of this device's provider, for this run */
  'message.retry': z.strictObject({ conversation: ref, entry: ref, model: z.string().trim().min(1, 'is empty').max(200).optional() }),
  /** a new conversation of this device holding a copy of the branch root → `entry` (an id or prefix) */
  'conversation.fork': z.strictObject({ conversation: ref, entry: ref, title: z.string().max(1000).optional() }),
  /** a Pi or Claude Code session file (JSONL), whole, as a new conversation of this device */
  'conversation.import': z.strictObject({
    format: z.enum(['pi', 'claude-code', 'auto']),
    text: z.string().max(MAX_IMPORT_CHARS, `is longer than ${MAX_IMPORT_CHARS / 1024 / 1024} MiB: larger sessions are not imported`)
  }),
  /** names the branch starting at `entry` ('' clears the name): a `branch.name:<entry>` meta setting */
  'branch.name': z.strictObject({ conversation: ref, entry: entryId, name: z.string().max(BRANCH_NAME_MAX, `is longer than ${BRANCH_NAME_MAX} characters`) }),
  /** full-text search of every conversation and branch (words all match, the last as a prefix); `cursor` from the previous answer */
  'search.query': z.strictObject({ text: z.string().max(1000), limit: z.number().int().min(1).max(200).optional(), cursor: z.string().max(100).optional() })
}

export type ApiParamMethod = keyof typeof API_PARAMS
/** What a client sends for a method. */
export type ApiParamsIn<M extends ApiParamMethod> = z.input<typeof API_PARAMS[M]>
/** What a handler receives once the params are checked. */
export type ApiParamsOut<M extends ApiParamMethod> = z.output<typeof API_PARAMS[M]>

/** The params' problems in one line for the user: `field message; ...`. */
export function describeParamIssues (err: z.ZodError): string {
  return err.issues.map(i => {
    const where = i.path.length > 0 ? i.path.join('.') : 'params'
    return i.code === 'unrecognized_keys' ? `${where}: unknown field(s) ${i.keys.map(k => JSON.stringify(k)).join(', ')}` : `${where} ${i.message}`
  }).join('; ')
}
