// The node's SecretStore in the desktop app: main holds the secrets, encrypted with the
// system keychain; the node gets them at start and asks main to store new ones.
import type { FromNode } from './node-process-protocol'
import type { SecretName, SecretStore, Secrets } from '../secrets/secret-store'

const REPLY_TIMEOUT_MS = 15_000

interface Waiting {
  name: SecretName
  value: string | undefined
  resolve: () => void
  reject: (err: Error) => void
  timer: ReturnType<typeof setTimeout>
}

export class ParentSecretStore implements SecretStore {
  readonly description: string
  private readonly post: (msg: FromNode) => void
  private readonly values: Secrets
  private readonly waiting = new Map<number, Waiting>()
  private nextId = 1
  private closed = false

  constructor (o: { post: (msg: FromNode) => void; secrets: Secrets; description: string }) {
    this.post = o.post
    this.values = { ...o.secrets }
    this.description = o.description
  }

  async get (name: SecretName): Promise<string | undefined> {
    return this.values[name]
  }

  /** Resolves once main has stored it; only then does the node use the new value. */
  set (name: SecretName, value: string | undefined): Promise<void> {
    if (this.closed) return Promise.reject(new Error('the node is shutting down; set the key again when it is back'))
    const id = this.nextId++
    const v = value === undefined || value === '' ? undefined : value
    return new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => { this.finish(id, 'the app did not answer in time') }, REPLY_TIMEOUT_MS)
      this.waiting.set(id, { name, value: v, resolve, reject, timer })
      this.post({ type: 'secret-set', id, name, value: v ?? null })
    })
  }

  /** Main's answer to a secret-set. */
  saved (id: number, error?: string): void {
    this.finish(id, error)
  }

  close (): void {
    this.closed = true
    for (const id of [...this.waiting.keys()]) this.finish(id, 'the node is shutting down')
  }

  private finish (id: number, error: string | undefined): void {
    const w = this.waiting.get(id)
    if (w === undefined) return
    this.waiting.delete(id)
    clearTimeout(w.timer)
    if (error !== undefined) { w.reject(new Error(`the key was not stored: ${error}`)); return }
    if (w.value === undefined) delete this.values[w.name]
    else this.values[w.name] = w.value
    w.resolve()
  }
}
