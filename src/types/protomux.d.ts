// Minimal types for protomux, compact-encoding and @hyperswarm/secret-stream (only what Arbor calls).

declare module 'compact-encoding' {
  interface Encoding<T = unknown> { preencode: unknown; encode: unknown; decode: unknown; __t?: T }
  const c: { json: Encoding<unknown>; fixed32: Encoding<Buffer>; buffer: Encoding<Buffer | null>; string: Encoding<string> }
  export = c
}

declare module 'protomux' {
  import type { Duplex } from 'node:stream'
  namespace Protomux {
    interface Message { send (data: unknown): boolean }
    interface Channel {
      readonly opened: boolean
      readonly closed: boolean
      open (handshake?: unknown): void
      close (): void
      addMessage (opts: { encoding: unknown; onmessage?: (m: unknown) => void }): Message
      cork (): void
      uncork (): void
    }
    interface ChannelOptions {
      protocol: string
      id?: Buffer | null
      handshake?: unknown
      messages?: Array<{ encoding: unknown; onmessage?: (m: unknown) => void }>
      onopen?: (handshake: unknown) => void
      onclose?: () => void
      ondestroy?: () => void
    }
  }
  class Protomux {
    static from (stream: Duplex | Protomux): Protomux
    createChannel (opts: Protomux.ChannelOptions): Protomux.Channel | null
    pair (match: { protocol: string; id?: Buffer | null }, cb: (id: Buffer | null) => void): void
    unpair (match: { protocol: string; id?: Buffer | null }): void
    opened (match: { protocol: string; id?: Buffer | null }): boolean
  }
  export = Protomux
}

declare module '@hyperswarm/secret-stream' {
  import { Duplex } from 'node:stream'
  interface KeyPair { publicKey: Buffer; secretKey: Buffer }
  class NoiseSecretStream extends Duplex {
    constructor (isInitiator: boolean, rawStream?: Duplex | null, opts?: { keyPair?: KeyPair; autoStart?: boolean })
    readonly isInitiator: boolean
    readonly publicKey: Buffer | null
    readonly remotePublicKey: Buffer | null
    readonly handshakeHash: Buffer | null
    readonly rawStream: Duplex
    readonly opened: Promise<boolean>
    userData: unknown
    setKeepAlive (ms: number): void
    static keyPair (seed?: Buffer): KeyPair
  }
  export = NoiseSecretStream
}
