import fs from 'node:fs/promises'
import path from 'node:path'
import { writeStateFile } from '../disk/state-file'

/** A feed the device holds for a conversation: its own or one learned from a peer. */
export interface FeedRecord {
  key: string           // hex
  conversation: string
  device: string        // the device that writes it ('' until its header has been read)
  own: boolean
  indexed: number       // blocks read into the index and entry cache so far
}

/** What `arbor ls` shows of a conversation, kept so listing never reads entries. */
export interface ConversationSummary {
  id: string
  title: string
  createdAt: number
  updatedAt: number
  heads: string[]
  size: number          // entries held, waiting ones included
  waiting: number       // entries whose parents have not arrived
  cwd?: string
  autoRevival?: boolean
}

export interface IndexState {
  v: 1
  device: string
  /** false while a process has the store open and may have written past the watermarks */
  clean: boolean
  manifestIndexed: number
  feeds: Record<string, FeedRecord>
  conversations: Record<string, ConversationSummary>
}

/** Where a data directory keeps its index file (readable without opening the store). */
export function indexFilePath (dir: string): string {
  return path.join(path.resolve(dir), 'index', 'index.json')
}

/** Most recently updated first; ties by id, so every listing agrees. */
export function sortSummaries (list: ConversationSummary[]): ConversationSummary[] {
  return list.sort((a, b) => b.updatedAt - a.updatedAt || (a.id < b.id ? -1 : 1))
}

export function emptyIndex (device: string): IndexState {
  return { v: 1, device, clean: true, manifestIndexed: 0, feeds: {}, conversations: {} }
}

/**
 * The derived index file: summaries and per-feed watermarks. Written whole and renamed
 * into place, so a reader sees either the old or the new file, never a torn one.
 */
export class HistoryIndexFile {
  constructor (readonly file: string) {}

  /** The saved state, or null if there is none or it is unreadable (then: rebuild). Any device's if device is null. */
  async load (device: string | null): Promise<{ state: IndexState | null; problem?: string }> {
    let text: string
    try {
      text = await fs.readFile(this.file, 'utf8')
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { state: null }
      throw err
    }
    try {
      const state = JSON.parse(text) as IndexState
      if (state.v !== 1 || (device !== null && state.device !== device) || typeof state.feeds !== 'object' || typeof state.conversations !== 'object') {
        return { state: null, problem: 'index was written by another version or device' }
      }
      return { state }
    } catch {
      return { state: null, problem: 'index file is not valid JSON' }
    }
  }

  /** Writes the state as it is when the write starts (saves in a burst are one write). */
  save (state: IndexState): Promise<void> {
    return writeStateFile(this.file, () => JSON.stringify(state))
  }
}
