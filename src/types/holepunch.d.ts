// Minimal types for the Holepunch modules Arbor uses (they ship none). Only what we call.

declare module 'hypercore' {
  import type { EventEmitter } from 'node:events'
  import type { Duplex } from 'node:stream'
  namespace Hypercore {
    interface GetOptions { wait?: boolean; timeout?: number; valueEncoding?: unknown }
    /** one peer replicating a core (hypercore/lib/replicator.js) */
    interface Peer {
      /** the connection's Noise stream */
      readonly stream: unknown
      /** whether the peer told its length yet */
      readonly remoteSynced: boolean
      /** the blocks the peer holds from the start, as far as it said */
      readonly remoteContiguousLength: number
    }
    interface Core extends EventEmitter {
      readonly key: Buffer | null
      readonly discoveryKey: Buffer | null
      readonly length: number
      readonly contiguousLength: number
      readonly writable: boolean
      readonly closed: boolean
      readonly opened: boolean
      /** the peers replicating this core now */
      readonly peers: readonly Peer[]
      ready (): Promise<void>
      close (): Promise<void>
      /** whether this session makes the core download (and replicate on every connection) */
      setActive (active: boolean): void
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
    /** the storage under every core (hypercore-storage) */
    readonly storage: { close (): Promise<void> }
    ready (): Promise<void>
    close (): Promise<void>
    get (opts: Buffer | { name?: string; key?: Buffer; valueEncoding?: unknown; writable?: boolean; wait?: boolean; exclusive?: boolean; active?: boolean }): Hypercore.Core
    namespace (name: string): Corestore
    session (opts?: Record<string, unknown>): Corestore
    replicate (isInitiator: boolean | Duplex, opts?: Record<string, unknown>): Duplex
    createKeyPair (name: string): Promise<KeyPair>
    findingPeers (): () => void
    /** calls fn with the internal core of every core opened from now on (for this store, or for a peer that opened its channel) */
    watch (fn: (core: Corestore.OpenedCore) => void): void
    /** the internal cores it holds now, sessions or not (those without one are closed a few seconds after they went idle) */
    readonly cores: Iterable<Corestore.OpenedCore>
    unwatch (fn: (core: Corestore.OpenedCore) => void): void
  }
  namespace Corestore {
    /** what watch() passes: the core under the sessions */
    interface OpenedCore { readonly key: Buffer | null; ready (): Promise<void> }
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
    namespace (name: string | Buffer, count: number): Buffer[]
  }
  export = crypto
}

declare module 'hypercore/errors' {
  class HypercoreError extends Error { code: string }
  export = HypercoreError
}

declare module 'hyperdht' {
  import type { EventEmitter } from 'node:events'
  namespace DHT {
    interface KeyPair { publicKey: Buffer; secretKey: Buffer }
    interface Node { host: string; port: number }
    interface Options { bootstrap?: Array<Node | string>; host?: string; port?: number; keyPair?: KeyPair }
  }
  class DHT extends EventEmitter {
    constructor (opts?: DHT.Options)
    static keyPair (seed?: Buffer): DHT.KeyPair
    ready (): Promise<void>
    /** one PING to a DHT node's address; rejects when it does not answer */
    ping (to: DHT.Node): Promise<unknown>
    destroy (opts?: { force?: boolean }): Promise<void>
  }
  export = DHT
}

declare module 'hyperdht/testnet.js' {
  import type DHT from 'hyperdht'
  interface Testnet {
    readonly nodes: DHT[]
    readonly bootstrap: DHT.Node[]
    createNode (opts?: DHT.Options): DHT
    destroy (): Promise<void>
  }
  function createTestnet (size?: number, opts?: { host?: string; port?: number; bootstrap?: DHT.Node[] }): Promise<Testnet>
  export = createTestnet
}

declare module 'hyperswarm' {
  import type { EventEmitter } from 'node:events'
  import type DHT from 'hyperdht'
  import type NoiseSecretStream from '@hyperswarm/secret-stream'
  namespace Hyperswarm {
    interface KeyPair { publicKey: Buffer; secretKey: Buffer }
    interface Discovery {
      flushed (): Promise<void>
      refresh (opts?: { server?: boolean; client?: boolean }): Promise<void>
      destroy (): Promise<void>
    }
    interface PeerInfo { publicKey: Buffer; topics: Buffer[]; banned: boolean; ban (val: boolean): void }
    interface Options {
      keyPair?: KeyPair
      seed?: Buffer
      maxPeers?: number
      /** true = reject; a rejected peer stays banned for this swarm's lifetime */
      firewall?: (remotePublicKey: Buffer, payload: unknown) => boolean
      dht?: DHT
      bootstrap?: DHT.Node[]
    }
  }
  class Hyperswarm extends EventEmitter {
    constructor (opts?: Hyperswarm.Options)
    readonly keyPair: Hyperswarm.KeyPair
    readonly dht: DHT
    readonly connections: Set<NoiseSecretStream>
    readonly peers: Map<string, Hyperswarm.PeerInfo>
    join (topic: Buffer, opts?: { server?: boolean; client?: boolean; limit?: number }): Hyperswarm.Discovery
    leave (topic: Buffer): Promise<void>
    joinPeer (publicKey: Buffer): void
    leavePeer (publicKey: Buffer): void
    flush (): Promise<void>
    suspend (): Promise<void>
    resume (): Promise<void>
    destroy (opts?: { force?: boolean }): Promise<void>
  }
  export = Hyperswarm
}

declare module 'blind-pairing' {
  import type { EventEmitter } from 'node:events'
  import type Hyperswarm from 'hyperswarm'
  namespace BlindPairing {
    interface CreatedInvite { id: Buffer; invite: Buffer; seed: Buffer; publicKey: Buffer; discoveryKey: Buffer; expires: number }
    interface DecodedInvite { id: Buffer; seed: Buffer; discoveryKey: Buffer | null; expires: number }
    /** what the member confirms with; `additional` must be signed with the invite's key pair */
    interface Confirmation { key: Buffer; encryptionKey?: Buffer; additional?: { data: Buffer; signature: Buffer } }
    interface MemberRequest {
      readonly inviteId: Buffer
      readonly userData: Buffer | null
      /** throws if the request was not made with this invite */
      open (invitePublicKey: Buffer): Buffer | null
      confirm (confirmation: Confirmation): void
      /** status: 1 rejected, 2 invite used, 3 invite expired */
      deny (opts?: { status?: number }): void
    }
    /** emits 'rejected' (err with .code PAIRING_REJECTED | INVITE_USED | INVITE_EXPIRED, or a decoding error) */
    interface CandidateRequest extends EventEmitter { readonly inviteId: Buffer }
    interface Result { key: Buffer; encryptionKey: Buffer | null; data: Buffer | null }
    interface Member { ready (): Promise<void>; flushed (): Promise<void>; close (): Promise<void> }
    interface Candidate { ready (): Promise<void>; close (): Promise<void>; readonly paired: Result | null; readonly request: CandidateRequest }
  }
  class BlindPairing {
    constructor (swarm: Hyperswarm, opts?: { poll?: number })
    static createInvite (key: Buffer, opts?: { expires?: number; data?: Buffer; discoveryKey?: Buffer; seed?: Buffer }): BlindPairing.CreatedInvite
    static decodeInvite (invite: Buffer): BlindPairing.DecodedInvite
    addMember (opts: { discoveryKey: Buffer; onadd: (request: BlindPairing.MemberRequest) => void | Promise<void> }): BlindPairing.Member
    addCandidate (opts: { invite: Buffer; userData: Buffer; onadd: (result: BlindPairing.Result) => void | Promise<void> }): BlindPairing.Candidate
    close (): Promise<void>
  }
  export = BlindPairing
}

declare module 'z32' {
  const z32: {
    encode (data: Uint8Array): string
    /** throws on a character outside the z-base-32 alphabet */
    decode (s: string): Buffer
  }
  export = z32
}
