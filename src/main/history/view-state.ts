import fs from 'node:fs/promises'
import { writeStateFile } from '../disk/state-file'

/**
 * What this device is looking at: the selected entry per conversation. Local to the
 * device (never replicated, never part of history); lost state only resets a view.
 */
export class ViewState {
  private sel: Record<string, string> = {}
  private dirty = false

  constructor (readonly file: string) {}

  async load (): Promise<void> {
    try {
      const raw = JSON.parse(await fs.readFile(this.file, 'utf8')) as { selected?: Record<string, string> }
      this.sel = raw.selected ?? {}
    } catch (err) {
      // A missing or unreadable file only means no selections yet.
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT' && !(err instanceof SyntaxError)) throw err
    }
  }

  selected (conversation: string): string | undefined {
    return this.sel[conversation]
  }

  select (conversation: string, entry: string): void {
    this.sel[conversation] = entry
    this.dirty = true
  }

  async save (): Promise<void> {
    if (!this.dirty) return
    this.dirty = false
    try {
      await writeStateFile(this.file, JSON.stringify({ selected: this.sel }))
    } catch (err) {
      this.dirty = true // still to be saved
      throw err
    }
  }
}
