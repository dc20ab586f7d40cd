import { z } from 'zod'
import { canonicalJson } from './canonical-json'

/** Lower-case hex of 32 bytes: entry ids and device public keys. */
const Hex32 = z.string().regex(/^[0-9a-f]{64}$/, 'must be 64 lower-case hex characters')

export const EFFECT_CLASSES = ['read', 'idempotent', 'workspace', 'external'] as const
export type EffectClass = typeof EFFECT_CLASSES[number]

const HlcSchema = z.object({ wall: z.number().int().nonnegative(), counter: z.number().int().nonnegative(), device: Hex32 })
const AgentRef = z.object({ device: Hex32, epoch: z.number().int().nonnegative() })
const Usage = z.object({ input: z.number().int().nonnegative(), output: z.number().int().nonnegative(), reasoning: z.number().int().nonnegative().optional() })
const ToolCall = z.object({ id: z.string().min(1), name: z.string().min(1), args: z.unknown() })

/**
 * The body of each kind. Validation only checks what is here; fields a newer version
 * adds are kept (the id covers them) and ignored.
 */
export const BODY_SCHEMAS = {
  conversation: z.object({
    title: z.string().max(1000),
    nonce: z.string().min(1),
    cwd: z.string().optional(),
    model: z.string().optional(),
    autoRevival: z.boolean().optional()
  }),
  /** reply: false — written into the history without asking an agent to answer (`arbor post`) */
  user: z.object({ text: z.string(), reply: z.literal(false).optional() }),
  assistant: z.object({
    text: z.string(),
    toolCalls: z.array(ToolCall).optional(),
    reasoning: z.string().optional(),
    usage: Usage.optional(),
    model: z.string().optional(),
    finish: z.string().optional()
  }),
  'tool.intent': z.object({
    callId: z.string().min(1),
    tool: z.string().min(1),
    args: z.unknown(),
    effect: z.enum(EFFECT_CLASSES),
    idemKey: z.string().min(1)
  }),
  'tool.result': z.object({
    callId: z.string().min(1),
    status: z.enum(['ok', 'error', 'unknown', 'cancelled']),
    output: z.string(),
    truncated: z.boolean().optional()
  }),
  'agent.started': z.object({
    epoch: z.number().int().nonnegative(),
    reason: z.enum(['user', 'resume', 'revival', 'restart']),
    previous: AgentRef.optional()
  }),
  'agent.stopped': z.object({
    epoch: z.number().int().nonnegative(),
    reason: z.enum(['done', 'cancelled', 'superseded', 'crash-loop', 'error']),
    by: AgentRef.optional(),
    message: z.string().optional()
  }),
  note: z.object({ text: z.string() }),
  meta: z.object({ key: z.string().min(1), value: z.unknown(), hlc: HlcSchema })
} as const

export type EntryKind = keyof typeof BODY_SCHEMAS
export const ENTRY_KINDS = Object.keys(BODY_SCHEMAS) as EntryKind[]
export type BodyOf<K extends EntryKind> = z.infer<typeof BODY_SCHEMAS[K]>

export interface Author { device: string; agent?: string }

/** One immutable event of a conversation (DESIGN.md, "History"). */
export interface EntryOf<K extends EntryKind> {
  v: 1
  id: string
  conversation: string
  parents: string[]
  author: Author
  ts: number
  kind: K
  body: BodyOf<K>
}
export type Entry = { [K in EntryKind]: EntryOf<K> }[EntryKind]

/** What a writer supplies; the store fills in the rest. */
export type EntryDraft = { [K in EntryKind]: { kind: K; body: BodyOf<K>; parents: string[]; agent?: string } }[EntryKind]

/** Entries larger than this are refused: tool output is cut long before. */
export const MAX_ENTRY_BYTES = 1024 * 1024

// Strict: a top-level field outside the id's hash would be stored unauthenticated.
const Envelope = z.strictObject({
  v: z.literal(1),
  id: Hex32,
  conversation: Hex32,
  parents: z.array(Hex32).max(64),
  author: z.object({ device: Hex32, agent: z.string().min(1).max(200).optional() }),
  ts: z.number().int().nonnegative(),
  kind: z.string(),
  body: z.unknown()
})

/** The canonical bytes an id is the hash of: everything but the id (and a root's own id). */
export function hashInput (e: Omit<Entry, 'id'> | Entry): string {
  return canonicalJson({
    v: e.v,
    // A root's conversation is its own id, which cannot be part of its own hash.
    conversation: e.parents.length === 0 ? null : e.conversation,
    parents: e.parents,
    author: e.author,
    ts: e.ts,
    kind: e.kind,
    body: e.body
  })
}

/** The stored form of an entry: canonical JSON for entries written here, so stored bytes are deterministic. */
export function encodeEntry (e: Entry): string {
  let text = encoded.get(e)
  if (text === undefined) encoded.set(e, text = canonicalJson(e))
  return text
}

// Entries are immutable, so each one's encoding is computed once (for the feed and the cache).
const encoded = new WeakMap<Entry, string>()

/**
 * Remembers the text an entry was read from, to be stored again as it is (the entry cache
 * needs one JSON line, not the canonical form). Text with a line break is not kept.
 */
export function rememberEncoding (e: Entry, text: string): void {
  if (!text.includes('\n') && !encoded.has(e)) encoded.set(e, text)
}

export class InvalidEntryError extends Error {
  constructor (message: string) {
    super(message)
    this.name = 'InvalidEntryError'
  }
}

export type Validation = { ok: true; entry: Entry } | { ok: false; error: string }

function describe (issues: z.core.$ZodIssue[], prefix: string): string {
  return issues.slice(0, 3).map(i => `${[prefix, ...i.path.map(String)].filter(Boolean).join('.') || 'entry'} ${i.message}`).join('; ')
}

/**
 * Checks schema, per-kind body and structure: everything but the id's hash (which
 * src/main/history/entry-codec.ts checks with the platform's SHA-256).
 * `device`, when given, is the device that wrote the feed the entry came from.
 */
export function checkEntryShape (raw: unknown, device?: string): Validation {
  const env = Envelope.safeParse(raw)
  const idHint = typeof (raw as { id?: unknown })?.id === 'string' ? `entry ${String((raw as { id: string }).id).slice(0, 12)}: ` : 'entry: '
  if (!env.success) return { ok: false, error: idHint + describe(env.error.issues, '') }
  const e = env.data
  // Own keys only: a kind like "toString" must not find Object.prototype's.
  const schema = Object.hasOwn(BODY_SCHEMAS, e.kind) ? (BODY_SCHEMAS as Record<string, z.ZodType>)[e.kind] : undefined
  if (schema === undefined) return { ok: false, error: `${idHint}unknown kind "${e.kind}"` }
  const body = schema.safeParse(e.body)
  if (!body.success) return { ok: false, error: `${idHint}${e.kind} ` + describe(body.error.issues, 'body') }
  if ((e.kind === 'conversation') !== (e.parents.length === 0)) {
    return { ok: false, error: `${idHint}only a conversation root has no parents, and a root is a "conversation" entry` }
  }
  if (new Set(e.parents).size !== e.parents.length) return { ok: false, error: `${idHint}parents repeat` }
  if (e.parents.includes(e.id)) return { ok: false, error: `${idHint}is its own parent` }
  if (e.parents.length === 0 && e.conversation !== e.id) return { ok: false, error: `${idHint}a root's conversation must be its own id` }
  if (device !== undefined && e.author.device !== device) {
    return { ok: false, error: `${idHint}author ${e.author.device.slice(0, 12)} is not the device ${device.slice(0, 12)} that wrote this feed` }
  }
  return { ok: true, entry: raw as Entry }
}
