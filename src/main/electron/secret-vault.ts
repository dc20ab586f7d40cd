// The desktop app keeps the API key encrypted with Electron's safeStorage (the macOS
// Keychain, Windows DPAPI, a Linux keyring) in <data>/secrets.enc; only main can decrypt
// it, and it hands the key to the node at start. Without a keyring, the 0600 secrets.json.
import fs from 'node:fs'
import path from 'node:path'
import type { Logger } from '../../shared/logger'
import { readJsonFile, writeStateFile } from '../disk/state-file'
import { FileSecretStore, type SecretName, type SecretStore } from '../secrets/secret-store'

/** What main uses of Electron's safeStorage (the asynchronous API; the synchronous one is deprecated). */
export interface SafeStorageLike {
  isAsyncEncryptionAvailable (): Promise<boolean>
  encryptStringAsync (plainText: string): Promise<Buffer>
  decryptStringAsync (encrypted: Buffer): Promise<{ shouldReEncrypt: boolean; result: string }>
  /** Linux only: 'basic_text' means a hard-coded password, i.e. no protection */
  getSelectedStorageBackend? (): string
}

export const encryptedSecretsFile = (dataDir: string): string => path.join(dataDir, 'secrets.enc')

/** `<data>/secrets.enc`: `{"apiKey": "<base64 of the ciphertext>"}`, mode 0600. */
export class EncryptedSecretStore implements SecretStore {
  readonly file: string
  readonly description = 'encrypted with the system keychain'
  private readonly safe: SafeStorageLike
  private readonly log: Logger

  constructor (dataDir: string, safe: SafeStorageLike, log: Logger) {
    this.file = encryptedSecretsFile(dataDir)
    this.safe = safe
    this.log = log
  }

  /** The decrypted value; undefined (and a line in the log) when the keychain cannot decrypt it any more. */
  async get (name: SecretName): Promise<string | undefined> {
    const sealed = (await this.read())[name]
    if (sealed === undefined) return undefined
    try {
      const { result, shouldReEncrypt } = await this.safe.decryptStringAsync(Buffer.from(sealed, 'base64'))
      // The keychain rotated its key: store it under the new one.
      if (shouldReEncrypt) await this.set(name, result).catch((err: Error) => { this.log.warn(`could not re-encrypt the ${name}: ${err.message}`) })
      return result
    } catch (err) {
      this.log.error(`the stored ${name} in ${this.file} cannot be decrypted (${(err as Error).message}); set it again in Settings`)
      return undefined
    }
  }

  async set (name: SecretName, value: string | undefined): Promise<void> {
    const next = { ...await this.read() }
    if (value === undefined || value === '') delete next[name]
    else next[name] = (await this.safe.encryptStringAsync(value)).toString('base64')
    await writeStateFile(this.file, JSON.stringify(next) + '\n', { mode: 0o600 })
  }

  private async read (): Promise<Partial<Record<SecretName, string>>> {
    const json = await readJsonFile(this.file) as Record<string, unknown> | undefined
    return typeof json?.apiKey === 'string' && json.apiKey !== '' ? { apiKey: json.apiKey } : {}
  }
}

/** Whether safeStorage really protects anything here (on Linux without a keyring it does not). */
export async function encryptionAvailable (safe: SafeStorageLike, platform: NodeJS.Platform): Promise<boolean> {
  if (!await safe.isAsyncEncryptionAvailable()) return false
  return !(platform === 'linux' && safe.getSelectedStorageBackend?.() === 'basic_text')
}

/**
 * Main's SecretStore: encrypted when the system has a keychain — a key left in plain text
 * in secrets.json (by `arbor serve`, or while no keychain was there) moves in and leaves
 * that file — else the private secrets.json, and the log and the settings say so.
 */
export async function openSecretVault (o: { dataDir: string; safeStorage: SafeStorageLike; platform: NodeJS.Platform; log: Logger }): Promise<SecretStore> {
  const plain = new FileSecretStore(o.dataDir)
  if (!await encryptionAvailable(o.safeStorage, o.platform).catch(() => false)) {
    o.log.warn(`no system keychain to encrypt the API key with: it is kept in ${plain.file}, readable only by you`)
    if (fs.existsSync(encryptedSecretsFile(o.dataDir))) o.log.warn(`${encryptedSecretsFile(o.dataDir)} holds a key encrypted with a keychain that is not available now; it is used again when the keychain is back`)
    return new FileSecretStore(o.dataDir, { description: `in ${plain.file}, readable only by you (no system keychain was found to encrypt it)` })
  }
  const vault = new EncryptedSecretStore(o.dataDir, o.safeStorage, o.log)
  const old = await plain.get('apiKey').catch((err: Error) => { o.log.warn(`could not read ${plain.file}: ${err.message}`); return undefined })
  if (old !== undefined) {
    try {
      await vault.set('apiKey', old)
      await plain.set('apiKey', undefined)
      o.log.info(`moved the API key from ${plain.file} into ${vault.file}, encrypted`)
    } catch (err) {
      // Not fatal: the key stays where it was, and the next start tries again.
      o.log.warn(`could not move the API key from ${plain.file} into ${vault.file}: ${(err as Error).message}`)
    }
  }
  return vault
}
