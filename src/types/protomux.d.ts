// Minimal types for protomux, compact-encoding and @hyperswarm/secret-stream (only what Arbor calls).

declare module 'compact-encoding' {
  namespace c {
    /** Where an encoder is in a buffer: preencode grows `end`, encode and decode move `start`. */
    interface State { start: number; end: number; buffer: Buffer | null }
    /** `I`: what is encoded; `O`: what decoding gives (the same unless the codec checks what it reads). */
    interface Encoding<I = unknown, O = I> {
      preencode (state: State, m: I): void
      encode (state: State, m: I): void
      decode (state: State): O
    }
  }
  const c: {
    json: c.Encoding<unknown>
    fixed32: c.Encoding<Buffer>
    buffer: c.Encoding<Buffer | null>
    string: c.Encoding<string>
    uint16: c.Encoding<number>
    state (start?: number, end?: number, buffer?: Buffer | null): c.State
    encode<I> (enc: c.Encoding<I, unknown>, m: I): Buffer
    decode<O> (enc: c.Encoding<never, O>, buffer: Buffer): O
  }
  export = c
}

declare module 'protomux' {
  import type { Duplex } from 'node:stream'
  namespace Protomux {
    interface Message { send (data: unknown): boolean }
    interface Channel {
      readonly opened: boolean
      readonly closed: boolean
      /** the message handles, in the order they were added */
      readonly messages: Message[]
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
