import type { Entry } from '../../../shared/entry/entry'
import type { IrMessage } from '../../../shared/llm-ir'
import { irMessagesOf, type IrMessageBuilder } from './step-planner'

/**
 * The model messages of an agent's branch (toIrMessages), kept up to date as the branch grows:
 * a model step walks only the entries appended since the last one, not the whole branch.
 * Always equal to toIrMessages(branch, system): anything but entries appended behind the ones
 * seen (another branch, or an entry replaced) and any compaction among the new entries (it
 * changes what the model is shown) make it walk the branch again from its latest compaction.
 */
export class ModelMessages {
  private builder: IrMessageBuilder | undefined
  /** the branch it has walked, and how far */
  private branch: readonly Entry[] | undefined
  private seen = 0
  private last: Entry | undefined

  constructor (private readonly system: string) {}

  /** The messages of `branch` (a new array each call; the messages already made are shared). */
  of (branch: readonly Entry[]): IrMessage[] {
    if (!this.extends(branch)) return this.rebuild(branch)
    for (let i = this.seen; i < branch.length; i++) {
      if ((branch[i] as Entry).kind === 'compaction') return this.rebuild(branch)
    }
    const builder = this.builder as IrMessageBuilder
    for (let i = this.seen; i < branch.length; i++) builder.push(branch[i] as Entry)
    this.mark(branch)
    return builder.finish()
  }

  /** Whether `branch` is the one walked so far with entries added at its end. */
  private extends (branch: readonly Entry[]): boolean {
    return this.builder !== undefined && branch === this.branch && branch.length >= this.seen &&
      (this.seen === 0 || branch[this.seen - 1] === this.last)
  }

  private rebuild (branch: readonly Entry[]): IrMessage[] {
    const builder = irMessagesOf(branch, this.system)
    this.builder = builder
    this.mark(branch)
    return builder.finish()
  }

  private mark (branch: readonly Entry[]): void {
    this.branch = branch
    this.seen = branch.length
    this.last = branch.at(-1)
  }
}
