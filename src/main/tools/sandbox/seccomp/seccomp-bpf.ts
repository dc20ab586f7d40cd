/**
 * A small assembler for classic BPF, the language of seccomp filters (linux/filter.h,
 * linux/seccomp.h). Only what a seccomp program needs: load a 32-bit word of struct
 * seccomp_data, AND with a constant, compare-and-branch on constants, jump, return.
 * Branch targets are labels; they must lie ahead (classic BPF cannot jump back) and within
 * 255 instructions for a conditional jump, which assemble() checks. Pure.
 */

// Opcodes (linux/bpf_common.h): class | size | mode, class | op | source.
export const BPF = {
  LD_W_ABS: 0x20, // A = *(u32 *)(seccomp_data + k)
  ALU_AND_K: 0x54, // A &= k
  JMP_JA: 0x05, // pc += k
  JMP_JEQ_K: 0x15, // pc += (A == k) ? jt : jf
  JMP_JGT_K: 0x25, // unsigned
  JMP_JGE_K: 0x35, // unsigned
  JMP_JSET_K: 0x45, // pc += (A & k) ? jt : jf
  RET_K: 0x06 // return k
} as const

// Return values (linux/seccomp.h): the action in the high 16 bits, data (errno) in the low.
export const SECCOMP_RET = {
  KILL_PROCESS: 0x80000000,
  KILL_THREAD: 0x00000000,
  TRAP: 0x00030000,
  ERRNO: 0x00050000,
  ALLOW: 0x7fff0000
} as const

/** Offsets in struct seccomp_data { int nr; u32 arch; u64 instruction_pointer; u64 args[6]; } */
export const SECCOMP_DATA = {
  nr: 0,
  arch: 4,
  /** args[i] is 64 bits in native (little-endian on x86_64 and aarch64) order: low word first */
  argLow: (i: number): number => 16 + 8 * i,
  argHigh: (i: number): number => 20 + 8 * i,
  size: 64
} as const

export interface Insn { code: number; jt: number; jf: number; k: number }

/** Where a branch goes: a label, or the next instruction. */
export type Target = string | typeof NEXT
export const NEXT = Symbol('next')

type Pending =
  | { kind: 'plain'; code: number; k: number }
  | { kind: 'cond'; code: number; k: number; t: Target; f: Target }
  | { kind: 'ja'; to: string }

export class BpfAssembler {
  private readonly code: Pending[] = []
  private readonly labels = new Map<string, number>()

  /** Marks the next instruction. */
  label (name: string): this {
    if (this.labels.has(name)) throw new Error(`BPF label ${name} defined twice`)
    this.labels.set(name, this.code.length)
    return this
  }

  /** A = the 32-bit word at `offset` of seccomp_data. */
  load (offset: number): this {
    if (!Number.isInteger(offset) || offset < 0 || offset + 4 > SECCOMP_DATA.size || offset % 4 !== 0) throw new Error(`BPF load at a bad offset ${offset}`)
    return this.plain(BPF.LD_W_ABS, offset)
  }

  and (k: number): this { return this.plain(BPF.ALU_AND_K, k) }
  ret (k: number): this { return this.plain(BPF.RET_K, k) }

  jeq (k: number, t: Target, f: Target = NEXT): this { return this.cond(BPF.JMP_JEQ_K, k, t, f) }
  jge (k: number, t: Target, f: Target = NEXT): this { return this.cond(BPF.JMP_JGE_K, k, t, f) }
  jgt (k: number, t: Target, f: Target = NEXT): this { return this.cond(BPF.JMP_JGT_K, k, t, f) }
  jset (k: number, t: Target, f: Target = NEXT): this { return this.cond(BPF.JMP_JSET_K, k, t, f) }
  ja (to: string): this {
    this.code.push({ kind: 'ja', to })
    return this
  }

  get length (): number { return this.code.length }

  /** The instructions with every label resolved. */
  instructions (): Insn[] {
    const at = (target: Target, pc: number, max: number): number => {
      if (target === NEXT) return 0
      const dest = this.labels.get(target)
      if (dest === undefined) throw new Error(`BPF label ${target} is not defined`)
      const off = dest - pc - 1
      if (off < 0) throw new Error(`BPF jump from ${pc} back to ${target} (${dest}): classic BPF jumps only forward`)
      if (off > max) throw new Error(`BPF jump from ${pc} to ${target} is ${off} instructions, more than ${max}`)
      return off
    }
    return this.code.map((p, pc): Insn => {
      if (p.kind === 'plain') return { code: p.code, jt: 0, jf: 0, k: p.k >>> 0 }
      if (p.kind === 'ja') return { code: BPF.JMP_JA, jt: 0, jf: 0, k: at(p.to, pc, 0xffffffff) }
      return { code: p.code, jt: at(p.t, pc, 255), jf: at(p.f, pc, 255), k: p.k >>> 0 }
    })
  }

  /** The program as bwrap's --seccomp wants it: struct sock_filter[], little-endian. */
  assemble (): Buffer {
    return encodeProgram(this.instructions())
  }

  private plain (code: number, k: number): this {
    this.checkK(k)
    this.code.push({ kind: 'plain', code, k })
    return this
  }

  private cond (code: number, k: number, t: Target, f: Target): this {
    this.checkK(k)
    this.code.push({ kind: 'cond', code, k, t, f })
    return this
  }

  private checkK (k: number): void {
    if (!Number.isInteger(k) || k < -0x80000000 || k > 0xffffffff) throw new Error(`BPF constant ${k} does not fit 32 bits`)
  }
}

/** The kernel's limit on one filter (BPF_MAXINSNS). */
export const BPF_MAXINSNS = 4096

/** struct sock_filter { u16 code; u8 jt; u8 jf; u32 k; }, 8 bytes each. */
export function encodeProgram (insns: readonly Insn[]): Buffer {
  if (insns.length === 0 || insns.length > BPF_MAXINSNS) throw new Error(`a BPF program has 1 to ${BPF_MAXINSNS} instructions, not ${insns.length}`)
  const buf = Buffer.alloc(insns.length * 8)
  insns.forEach((i, n) => {
    buf.writeUInt16LE(i.code, n * 8)
    buf.writeUInt8(i.jt, n * 8 + 2)
    buf.writeUInt8(i.jf, n * 8 + 3)
    buf.writeUInt32LE(i.k >>> 0, n * 8 + 4)
  })
  return buf
}

export function decodeProgram (buf: Uint8Array): Insn[] {
  if (buf.length % 8 !== 0) throw new Error(`a BPF program is a multiple of 8 bytes, not ${buf.length}`)
  const b = Buffer.from(buf.buffer, buf.byteOffset, buf.byteLength)
  const out: Insn[] = []
  for (let o = 0; o < b.length; o += 8) out.push({ code: b.readUInt16LE(o), jt: b.readUInt8(o + 2), jf: b.readUInt8(o + 3), k: b.readUInt32LE(o + 4) })
  return out
}
