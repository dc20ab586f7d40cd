import { afterEach, describe, expect, it } from 'vitest'
import fs from 'node:fs'
import path from 'node:path'
import { memoryLogger } from '../../../src/shared/logger'
import { EncryptedSecretStore, openSecretVault, type SafeStorageLike } from '../../../src/main/electron/secret-vault'
import { FileSecretStore } from '../../../src/main/secrets/secret-store'
import { tempDirs } from '../../helpers/temp-dir'

// The desktop app's API key store with Electron's safeStorage substituted: a keychain that
// seals strings so that they cannot be read back without it.

const dirs = tempDirs('arbor-vault-')
afterEach(() => dirs.cleanup())

class FakeSafeStorage implements SafeStorageLike {
  available = true
  backend = 'gnome_libsecret'
  /** the key was rotated: the next decryption asks for re-encryption */
  rotated = false
  generation = 1
  async isAsyncEncryptionAvailable (): Promise<boolean> { return this.available }
  getSelectedStorageBackend (): string { return this.backend }
  async encryptStringAsync (plainText: string): Promise<Buffer> {
    return Buffer.concat([Buffer.from(`sealed${this.generation}:`), Buffer.from(plainText).map(b => b ^ 0x5a)])
  }
  async decryptStringAsync (encrypted: Buffer): Promise<{ shouldReEncrypt: boolean; result: string }> {
    const m = /^sealed(\d+):/.exec(encrypted.subarray(0, 10).toString('latin1'))
    if (m === null) throw new Error('Error while decrypting the ciphertext provided to safeStorage.decryptString')
    const result = Buffer.from(encrypted.subarray(m[0].length).map(b => b ^ 0x5a)).toString()
    return { result, shouldReEncrypt: this.rotated && Number(m[1]) < this.generation }
  }
}

const read = (dir: string, file: string): string => fs.readFileSync(path.join(dir, file), 'utf8')
const mode = (dir: string, file: string): number => fs.statSync(path.join(dir, file)).mode & 0o777

describe('the desktop app keeps the API key encrypted with safeStorage', () => {
  it('encrypts into secrets.enc (0600) and decrypts on the way out; never plain text on disk', async () => {
    const dir = await dirs.make()
    const safe = new FakeSafeStorage()
    const vault = await openSecretVault({ dataDir: dir, safeStorage: safe, platform: 'linux', log: memoryLogger() })
    expect(vault).toBeInstanceOf(EncryptedSecretStore)
    expect(vault.description).toBe('encrypted with the system keychain')
    expect(await vault.get('apiKey')).toBeUndefined()
    await vault.set('apiKey', 'sk-very-secret')
    expect(await vault.get('apiKey')).toBe('sk-very-secret')
    expect(read(dir, 'secrets.enc')).not.toContain('sk-very-secret')
    expect(mode(dir, 'secrets.enc')).toBe(0o600)
    expect(fs.existsSync(path.join(dir, 'secrets.json'))).toBe(false)
    const sealed = (JSON.parse(read(dir, 'secrets.enc')) as { apiKey: string }).apiKey
    expect((await safe.decryptStringAsync(Buffer.from(sealed, 'base64'))).result).toBe('sk-very-secret')
    await vault.set('apiKey', '')
    expect(await vault.get('apiKey')).toBeUndefined()
  })

  it('moves a key left in plain text in secrets.json into secrets.enc', async () => {
    const dir = await dirs.make()
    await new FileSecretStore(dir).set('apiKey', 'sk-from-arbor-serve')
    const log = memoryLogger()
    const vault = await openSecretVault({ dataDir: dir, safeStorage: new FakeSafeStorage(), platform: 'darwin', log })
    expect(await vault.get('apiKey')).toBe('sk-from-arbor-serve')
    expect(read(dir, 'secrets.json')).not.toContain('sk-from-arbor-serve')
    expect(read(dir, 'secrets.enc')).not.toContain('sk-from-arbor-serve')
    expect(log.lines).toContainEqual({ level: 'info', message: expect.stringMatching(/moved the API key from .*secrets\.json into .*secrets\.enc, encrypted/) })
  })

  it('re-encrypts under a rotated key, and a key it cannot decrypt any more reads as none, with a line in the log', async () => {
    const dir = await dirs.make()
    const safe = new FakeSafeStorage()
    const log = memoryLogger()
    const vault = new EncryptedSecretStore(dir, safe, log)
    await vault.set('apiKey', 'sk-1')
    safe.rotated = true
    safe.generation = 2
    expect(await vault.get('apiKey')).toBe('sk-1')
    expect(Buffer.from((JSON.parse(read(dir, 'secrets.enc')) as { apiKey: string }).apiKey, 'base64').toString('latin1')).toMatch(/^sealed2:/)

    fs.writeFileSync(path.join(dir, 'secrets.enc'), JSON.stringify({ apiKey: Buffer.from('garbage').toString('base64') }))
    expect(await vault.get('apiKey')).toBeUndefined()
    expect(log.lines.at(-1)).toMatchObject({ level: 'error', message: expect.stringMatching(/cannot be decrypted .*; set it again in Settings/) })
  })

  it('without a keychain (or with Linux\'s hard-coded basic_text one) falls back to the private secrets.json, and says so', async () => {
    for (const setup of [{ available: false, backend: 'gnome_libsecret', platform: 'win32' as const }, { available: true, backend: 'basic_text', platform: 'linux' as const }]) {
      const dir = await dirs.make()
      const safe = new FakeSafeStorage()
      safe.available = setup.available
      safe.backend = setup.backend
      const log = memoryLogger()
      const store = await openSecretVault({ dataDir: dir, safeStorage: safe, platform: setup.platform, log })
      expect(store).toBeInstanceOf(FileSecretStore)
      expect(store.description).toBe(`in ${path.join(dir, 'secrets.json')}, readable only by you (no system keychain was found to encrypt it)`)
      expect(log.lines).toContainEqual({ level: 'warn', message: `no system keychain to encrypt the API key with: it is kept in ${path.join(dir, 'secrets.json')}, readable only by you` })
      await store.set('apiKey', 'sk-plain')
      expect(mode(dir, 'secrets.json')).toBe(0o600)
      expect(fs.existsSync(path.join(dir, 'secrets.enc'))).toBe(false)
    }
  })

  it('basic_text only means "no keychain" on Linux', async () => {
    const safe = new FakeSafeStorage()
    safe.backend = 'basic_text'
    const store = await openSecretVault({ dataDir: await dirs.make(), safeStorage: safe, platform: 'darwin', log: memoryLogger() })
    expect(store).toBeInstanceOf(EncryptedSecretStore)
  })
})
