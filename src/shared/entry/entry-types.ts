// What an entry is: the envelope every entry has, each kind's body (the zod schemas its types
// are inferred from), and the types over them. A leaf, so the modules over entries (entry.ts,
// entry-written.ts) can name these types without naming each other.
import { z } from 'zod'
import { Hex32 } from './hex32-schema'

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
    autoRevival: z.boolean().optional(),
    /** a fork's source: the conversation and the entry its copied branch ended at (conversation.fork) */
    forkedFrom: z.object({ conversation: Hex32, entry: Hex32 }).optional()
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
    previous: AgentRef.optional(),
    /** the project instructions the agent was given (AGENTS.md …): where, which bytes */
    instructions: z.array(z.object({ path: z.string().max(4096), sha256: z.string().regex(/^[0-9a-f]{64}$/), bytes: z.number().int().nonnegative(), truncated: z.literal(true).optional() })).max(300).optional(),
    /**
     * The model this run was asked for beyond the device's setting (a retry's one-run choice), so
     * the device continues a turn its crash cut short with it; read from the device's own starts
     * only (a peer's start chooses nothing here).
     */
    model: z.string().min(1).max(200).optional()
  }),
  'agent.stopped': z.object({
    epoch: z.number().int().nonnegative(),
    reason: z.enum(['done', 'cancelled', 'superseded', 'crash-loop', 'error']),
    by: AgentRef.optional(),
    message: z.string().optional(),
    /**
     * Which of this device's limits stopped the turn ('steps', 'tokens'; runtime/agent/turn-limits.ts),
     * with reason 'done' so an older version still reads the stop (and shows its message). A string,
     * not an enum: a limit a newer version adds must not make this version refuse the body.
     */
    limit: z.string().optional()
  }),
  note: z.object({ text: z.string() }),
  /**
   * The branch from `folded.from` to `folded.to` (both on this branch, before this entry) told
   * to the model as `summary` from here on (runtime/agent/compaction.ts); the entries stay.
   * `tokens`: the context's estimated size before it was compacted. `keep`: the latest user message
   * of the range, told verbatim after the summary (its turn alone did not fit, so it was folded too;
   * a version that does not know the field sends the summary without it).
   */
  compaction: z.object({
    summary: z.string(),
    folded: z.object({ from: Hex32, to: Hex32 }),
    focus: z.string().optional(),
    model: z.string(),
    tokens: z.number().int().nonnegative(),
    keep: Hex32.optional()
  }),
  meta: z.object({ key: z.string().min(1), value: z.unknown(), hlc: HlcSchema })
} as const

/**
 * The version of the kinds and bodies above, said in the hello: bump it with every kind or
 * optional body field added (docs/ARCHITECTURE.md, "Evolving safely"), so a device can tell
 * a peer whose entries it may not all understand.
 */
export const ENTRY_SCHEMA_VERSION = 4

export type EntryKind = keyof typeof BODY_SCHEMAS
export const ENTRY_KINDS = Object.keys(BODY_SCHEMAS) as EntryKind[]
export type BodyOf<K extends EntryKind> = z.infer<typeof BODY_SCHEMAS[K]>

export interface Author { device: string; agent?: string }

/** What every entry has, whatever its kind: what is checked before an entry is kept. */
interface Envelope {
  v: 1
  id: string
  conversation: string
  parents: string[]
  author: Author
  ts: number
}

/** One immutable event of a conversation (DESIGN.md, "History"). */
export interface EntryOf<K extends EntryKind> extends Envelope {
  kind: K
  body: BodyOf<K>
}
export type KnownEntry = { [K in EntryKind]: EntryOf<K> }[EntryKind]

/**
 * An entry this version does not understand: a kind it does not know, or a body its kind's
 * schema refuses (a newer version wrote it). Kept, replicated and indexed like any other, its
 * children join the tree; shown as "from a newer version of Arbor", never acted on.
 * In memory (and in the entry cache) its kind is 'unknown', so no code can take it for a
 * kind it knows; `body` holds the kind and body as written (asWritten gives the entry back).
 * 'unknown' is therefore reserved: no version may give a kind that name.
 */
export interface UnknownEntry extends Envelope {
  kind: 'unknown'
  body: {
    kind: string
    body: unknown
    /** why a kind this version knows was not understood (its schema's complaint) */
    problem?: string
  }
}

export type Entry = KnownEntry | UnknownEntry

/** An entry as written to a feed: any kind, any body (what asWritten returns, what the id is the hash of). */
export interface WrittenEntry extends Envelope { kind: string; body: unknown }

/** What a writer supplies; the store fills in the rest. */
export type EntryDraft = { [K in EntryKind]: { kind: K; body: BodyOf<K>; parents: string[]; agent?: string } }[EntryKind]
