/**
 * The ready()/close() lifecycle of every long-lived object (as Holepunch modules have):
 * ready() opens once, close() closes once, close() during ready() waits for it, and a
 * failed open closes whatever it had opened.
 */
export class Lifecycle {
  private opening: Promise<void> | null = null
  private closing: Promise<void> | null = null
  opened = false
  closed = false

  constructor (private readonly onOpen: () => Promise<void>, private readonly onClose: () => Promise<void>) {}

  ready (): Promise<void> {
    if (this.opening === null) this.opening = this.open()
    return this.opening
  }

  close (): Promise<void> {
    if (this.closing === null) this.closing = this.shut()
    return this.closing
  }

  private async open (): Promise<void> {
    if (this.closing !== null) throw new Error('cannot open: already closed')
    try {
      await this.onOpen()
    } catch (err) {
      await this.onClose().catch(() => undefined)
      this.closed = true
      throw err
    }
    this.opened = true
  }

  private async shut (): Promise<void> {
    if (this.opening !== null) await this.opening.catch(() => undefined)
    if (this.opened) await this.onClose()
    this.closed = true
  }
}
