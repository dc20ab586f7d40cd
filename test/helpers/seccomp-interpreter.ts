/**
 * A classic-BPF interpreter with the kernel's seccomp rules (kernel/seccomp.c
 * seccomp_check_filter, net/core/filter.c): only absolute 32-bit loads inside
 * seccomp_data, ALU AND, forward jumps inside the program, and a return at the end of
 * every path. Written from the kernel's semantics, not from our assembler, to check it.
 */
import { decodeProgram, type Insn } from '../../src/main/tools/sandbox/seccomp/seccomp-bpf'
import type { SeccompData } from '../../src/main/tools/sandbox/seccomp/seccomp'

/** The 64 bytes of struct seccomp_data, little-endian. */
export function seccompDataBytes (d: SeccompData, ip = 0n): Buffer {
  const b = Buffer.alloc(64)
  b.writeInt32LE(d.nr | 0, 0)
  b.writeUInt32LE(d.arch >>> 0, 4)
  b.writeBigUInt64LE(ip, 8)
  for (let i = 0; i < 6; i++) b.writeBigUInt64LE(BigInt.asUintN(64, d.args[i] ?? 0n), 16 + 8 * i)
  return b
}

/** Throws what the kernel would refuse at load time. */
export function checkSeccompProgram (insns: readonly Insn[]): void {
  if (insns.length === 0 || insns.length > 4096) throw new Error(`bad length ${insns.length}`)
  insns.forEach((i, pc) => {
    switch (i.code) {
      case 0x20: // ld w abs
        if (i.k % 4 !== 0 || i.k + 4 > 64) throw new Error(`pc ${pc}: load at ${i.k} outside seccomp_data`)
        break
      case 0x54: case 0x06: break
      case 0x05:
        if (pc + 1 + i.k >= insns.length) throw new Error(`pc ${pc}: ja out of the program`)
        break
      case 0x15: case 0x25: case 0x35: case 0x45:
        if (pc + 1 + i.jt >= insns.length || pc + 1 + i.jf >= insns.length) throw new Error(`pc ${pc}: branch out of the program`)
        break
      default: throw new Error(`pc ${pc}: opcode 0x${i.code.toString(16)} not allowed in a seccomp filter`)
    }
  })
  const last = insns[insns.length - 1] as Insn
  if (last.code !== 0x06) throw new Error('the program does not end in a return')
}

/** Runs the filter on one system call; returns the 32-bit action. */
export function runSeccomp (program: Uint8Array, d: SeccompData): number {
  const insns = decodeProgram(program)
  checkSeccompProgram(insns)
  const data = seccompDataBytes(d)
  let a = 0
  let pc = 0
  for (let steps = 0; steps <= insns.length; steps++) {
    const i = insns[pc] as Insn
    switch (i.code) {
      case 0x20: a = data.readUInt32LE(i.k); pc++; break
      case 0x54: a = (a & i.k) >>> 0; pc++; break
      case 0x05: pc += 1 + i.k; break
      case 0x15: pc += 1 + (a === i.k ? i.jt : i.jf); break
      case 0x25: pc += 1 + (a > i.k ? i.jt : i.jf); break
      case 0x35: pc += 1 + (a >= i.k ? i.jt : i.jf); break
      case 0x45: pc += 1 + ((a & i.k) !== 0 ? i.jt : i.jf); break
      case 0x06: return i.k >>> 0
      default: throw new Error(`opcode 0x${i.code.toString(16)}`)
    }
  }
  throw new Error('the program ran longer than its length (cannot happen with forward jumps)')
}
