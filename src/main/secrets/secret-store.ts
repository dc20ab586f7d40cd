// Where a node keeps its secrets (the model API key). One interface, two homes: a private
// file for `arbor serve` and the CLI, and — in the desktop app — Electron's main process,
// which encrypts them with the system keychain (src/main/electron/secret-vault.ts; the node
// asks it through src/main/electron/parent-secret-store.ts).
import path from 'node:path'
import { readJsonFile, writeStateFile } from '../disk/state-file'

export type SecretName = 'apiKey'

export interface SecretStore {
  /** the stored value, if any */
  get (name: SecretName): Promise<string | undefined>
  /** stores a value; undefined or '' removes it */
  set (name: SecretName, value: string | undefined): Promise<void>
  /** how the secrets are kept, in words for the settings screen and the log */
  readonly description: string
}

export type Secrets = Partial<Record<SecretName, string>>

export const secretsFile = (dataDir: string): string => path.join(dataDir, 'secrets.json')

/** `<data>/secrets.json`, readable and writable by this user only (mode 0600). */
export class FileSecretStore implements SecretStore {
  readonly file: string
  readonly description: string

  constructor (dataDir: string, opts: { description?: string } = {}) {
    this.file = secretsFile(dataDir)
    this.description = opts.description ?? `in ${this.file}, readable only by you`
  }

  async get (name: SecretName): Promise<string | undefined> {
    return (await this.all())[name]
  }

  async set (name: SecretName, value: string | undefined): Promise<void> {
    const next = { ...await this.all() }
    if (value === undefined || value === '') delete next[name]
    else next[name] = value
    await writeStateFile(this.file, JSON.stringify(next) + '\n', { mode: 0o600 })
  }

  /** Every stored secret (read anew each time: the CLI may have changed the file). */
  async all (): Promise<Secrets> {
    const json = await readJsonFile(this.file) as Record<string, unknown> | undefined
    const out: Secrets = {}
    if (typeof json?.apiKey === 'string' && json.apiKey !== '') out.apiKey = json.apiKey
    return out
  }
}
