// Minimal types for the Holepunch modules Arbor uses (they ship none). Only what we call.

declare module 'hypercore' {
  import type { EventEmitter } from 'node:events'
  import type { Duplex } from 'node:stream'
  namespace Hypercore {
    interface GetOptions { wait?: boolean; timeout?: number; valueEncoding?: unknown }
    interface Core extends EventEmitter {
      readonly key: Buffer | null
      readonly discoveryKey: Buffer | null
      readonly length: number
      readonly contiguousLength: number
      readonly writable: boolean
      readonly closed: boolean
      readonly opened: boolean
      ready (): Promise<void>
      close (): Promise<void>
      append (block: Buffer | Buffer[]): Promise<{ length: number; byteLength: number }>
      get (index: number, opts?: GetOptions): Promise<Buffer | null>
      has (start: number, end?: number): Promise<boolean>
      update (opts?: { wait?: boolean; force?: boolean }): Promise<boolean>
      download (range?: { start?: number; end?: number; linear?: boolean }): { done (): Promise<void>; destroy (): void }
      session (opts?: Record<string, unknown>): Core
      replicate (isInitiator: boolean | Duplex, opts?: Record<string, unknown>): Duplex
    }
  }
  const Hypercore: { new (...args: unknown[]): Hypercore.Core }
  export = Hypercore
}

declare module 'corestore' {
  import type { EventEmitter } from 'node:events'
  import type { Duplex } from 'node:stream'
  import type Hypercore from 'hypercore'
  interface KeyPair { publicKey: Buffer; secretKey: Buffer }
  class Corestore extends EventEmitter {
    constructor (storage: string, opts?: Record<string, unknown>)
    readonly primaryKey: Buffer
    ready (): Promise<void>
    close (): Promise<void>
    get (opts: Buffer | { name?: string; key?: Buffer; valueEncoding?: unknown; writable?: boolean; wait?: boolean; exclusive?: boolean }): Hypercore.Core
    namespace (name: string): Corestore
    session (opts?: Record<string, unknown>): Corestore
    replicate (isInitiator: boolean | Duplex, opts?: Record<string, unknown>): Duplex
    createKeyPair (name: string): Promise<KeyPair>
    findingPeers (): () => void
  }
  export = Corestore
}

declare module 'hypercore-crypto' {
  interface KeyPair { publicKey: Buffer; secretKey: Buffer }
  const crypto: {
    keyPair (seed?: Buffer): KeyPair
    sign (message: Buffer, secretKey: Buffer): Buffer
    verify (message: Buffer, signature: Buffer, publicKey: Buffer): boolean
    discoveryKey (key: Buffer): Buffer
    hash (data: Buffer | Buffer[]): Buffer
    randomBytes (n: number): Buffer
  }
  export = crypto
}

declare module 'hypercore/errors' {
  class HypercoreError extends Error { code: string }
  export = HypercoreError
}
