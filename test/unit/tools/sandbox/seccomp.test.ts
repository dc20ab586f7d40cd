import fc from 'fast-check'
import fs from 'node:fs'
import { describe, expect, it } from 'vitest'
import { BpfAssembler, decodeProgram, encodeProgram, NEXT, SECCOMP_RET } from '../../../../src/main/tools/sandbox/seccomp/seccomp-bpf'
import {
  AF, compileSeccomp, ERRNO, policyVerdict, SANDBOX_SECCOMP_POLICY, sandboxSeccomp, TIOCLINUX, TIOCSTI, type SeccompData, type SyscallRule
} from '../../../../src/main/tools/sandbox/seccomp/seccomp'
import { AUDIT_ARCH, SYSCALL_ARCHES, syscallArch, type SyscallArch } from '../../../../src/main/tools/sandbox/seccomp/seccomp-syscalls'
import { checkSeccompProgram, runSeccomp } from '../../../helpers/seccomp-interpreter'

const X64 = syscallArch('x64') as SyscallArch
const ARM64 = syscallArch('arm64') as SyscallArch
const errno = (e: number): number => (SECCOMP_RET.ERRNO | e) >>> 0
const EPERM = errno(ERRNO.EPERM)
const ENOSYS = errno(ERRNO.ENOSYS)
const { ALLOW, KILL_PROCESS: KILL } = SECCOMP_RET

describe('BPF assembler', () => {
  it('resolves labels to forward offsets and round-trips through bytes', () => {
    const a = new BpfAssembler().load(0).jeq(5, 'yes', NEXT).ret(1).label('yes').ret(2)
    const insns = a.instructions()
    expect(insns).toEqual([
      { code: 0x20, jt: 0, jf: 0, k: 0 },
      { code: 0x15, jt: 1, jf: 0, k: 5 },
      { code: 0x06, jt: 0, jf: 0, k: 1 },
      { code: 0x06, jt: 0, jf: 0, k: 2 }
    ])
    expect(decodeProgram(a.assemble())).toEqual(insns)
    expect(runSeccomp(a.assemble(), { nr: 5, arch: 0, args: [] })).toBe(2)
    expect(runSeccomp(a.assemble(), { nr: 6, arch: 0, args: [] })).toBe(1)
  })

  it('refuses what classic BPF cannot do', () => {
    expect(() => new BpfAssembler().label('x').ret(0).ja('x').instructions()).toThrow(/only forward/)
    const far = new BpfAssembler().load(0).jeq(1, 'far')
    for (let i = 0; i < 256; i++) far.ret(0)
    far.label('far').ret(1)
    expect(() => far.instructions()).toThrow(/more than 255/)
    expect(() => new BpfAssembler().ja('nowhere').instructions()).toThrow(/not defined/)
    expect(() => new BpfAssembler().load(62)).toThrow(/bad offset/)
    expect(() => new BpfAssembler().jeq(2 ** 32, NEXT)).toThrow(/32 bits/)
    expect(() => encodeProgram([])).toThrow()
    expect(() => decodeProgram(Buffer.alloc(7))).toThrow(/multiple of 8/)
  })
})

/** `#define __NR_name nr` lines of a kernel header. */
function headerNumbers (file: string, prefix = '__NR_'): Map<string, number> | undefined {
  if (!fs.existsSync(file)) return undefined
  const out = new Map<string, number>()
  for (const m of fs.readFileSync(file, 'utf8').matchAll(new RegExp(`^#define ${prefix}(\\w+)\\s+(\\d+)`, 'gm'))) out.set(m[1] as string, Number(m[2]))
  return out
}

describe('syscall tables', () => {
  it.each([
    ['x86_64', X64, ['/usr/include/x86_64-linux-gnu/asm/unistd_64.h', '/usr/include/asm/unistd_64.h']],
    ['aarch64', ARM64, ['/usr/include/asm-generic/unistd.h']]
  ] as const)('%s numbers match the kernel headers on this machine', (_name, arch, files) => {
    const file = files.find(f => fs.existsSync(f))
    if (file === undefined) return // no linux-libc-dev here
    const nrs = headerNumbers(file) as Map<string, number>
    const generic3264 = headerNumbers(file, '__NR3264_') ?? new Map<string, number>()
    for (const [name, nr] of Object.entries(arch.numbers)) expect([name, nrs.get(name) ?? generic3264.get(name)]).toEqual([name, nr])
  })

  it('every call the policy names exists on x86_64 (aarch64 lacks only the x86 and obsolete ones)', () => {
    const names = SANDBOX_SECCOMP_POLICY.map(r => r.syscall)
    expect(names.filter(n => X64.numbers[n] === undefined)).toEqual([])
    expect(names.filter(n => ARM64.numbers[n] === undefined).sort()).toEqual(['create_module', 'modify_ldt', 'uselib'])
  })
})

const call = (arch: SyscallArch, name: string, ...args: Array<bigint | number>): SeccompData =>
  ({ nr: arch.numbers[name] as number, arch: arch.auditArch, args: args.map(BigInt) })

describe.each([['x86_64', X64], ['aarch64', ARM64]] as const)('the sandbox filter on %s', (_name, arch) => {
  const program = compileSeccomp(SANDBOX_SECCOMP_POLICY, arch)
  const run = (d: SeccompData): number => runSeccomp(program, d)

  it('is a valid seccomp program', () => {
    checkSeccompProgram(decodeProgram(program))
    expect(program.length / 8).toBeLessThan(256)
  })

  it('refuses the calls on the blocklist, with EPERM or ENOSYS', () => {
    for (const n of ['keyctl', 'add_key', 'request_key', 'unshare', 'setns', 'mount', 'umount2', 'pivot_root', 'chroot', 'bpf', 'perf_event_open',
      'userfaultfd', 'kexec_load', 'init_module', 'finit_module', 'delete_module', 'reboot', 'swapon', 'swapoff', 'syslog', 'acct', 'quotactl',
      'name_to_handle_at', 'open_by_handle_at']) expect([n, run(call(arch, n))]).toEqual([n, EPERM])
    for (const n of ['clone3', 'open_tree', 'move_mount', 'fsopen', 'fsconfig', 'fsmount', 'fspick', 'mount_setattr', 'io_uring_setup']) {
      expect([n, run(call(arch, n))]).toEqual([n, ENOSYS])
    }
    if (arch === X64) for (const n of ['modify_ldt', 'uselib']) expect(run(call(arch, n))).toBe(EPERM)
  })

  it('refuses TIOCSTI and TIOCLINUX on the low 32 bits, as the kernel reads the request', () => {
    expect(run(call(arch, 'ioctl', 0, TIOCSTI, 0))).toBe(EPERM)
    expect(run(call(arch, 'ioctl', 0, (1n << 32n) | BigInt(TIOCSTI), 0))).toBe(EPERM)
    expect(run(call(arch, 'ioctl', 0, 0xffffffff00000000n | BigInt(TIOCLINUX), 0))).toBe(EPERM)
    expect(run(call(arch, 'ioctl', 1, 0x5401, 0))).toBe(ALLOW) // TCGETS
    expect(run(call(arch, 'ioctl', 1, TIOCSTI + 1, 0))).toBe(ALLOW)
  })

  it('allows clone for threads and processes, not with a namespace flag', () => {
    expect(run(call(arch, 'clone', 17))).toBe(ALLOW) // fork: SIGCHLD
    expect(run(call(arch, 'clone', 0x3d0f00))).toBe(ALLOW) // pthread_create's flags
    expect(run(call(arch, 'clone', 0x10000000 | 17))).toBe(EPERM) // CLONE_NEWUSER
    expect(run(call(arch, 'clone', 0x00020000 | 17))).toBe(EPERM) // CLONE_NEWNS
    expect(run(call(arch, 'clone', 0x40000000))).toBe(EPERM) // CLONE_NEWNET
    expect(run(call(arch, 'clone', (0x10000000n << 32n) | 17n))).toBe(ALLOW) // high bits: dropped by the kernel (lower_32_bits)
  })

  it('refuses Unix and exotic sockets, keeps inet and netlink', () => {
    expect(run(call(arch, 'socket', AF.UNIX, 1, 0))).toBe(EPERM)
    expect(run(call(arch, 'socket', (7n << 32n) | 1n, 1, 0))).toBe(EPERM)
    for (const f of [AF.INET, AF.INET6, AF.NETLINK]) expect(run(call(arch, 'socket', f, 1, 0))).toBe(ALLOW)
    for (const f of [0, 17, 38, 40]) expect(run(call(arch, 'socket', f, 1, 0))).toBe(errno(ERRNO.EAFNOSUPPORT))
  })

  it('allows only the personalities that keep ASLR', () => {
    for (const p of [0, 8, 0xffffffff]) expect(run(call(arch, 'personality', p))).toBe(ALLOW)
    for (const p of [0x0040000, 0x0040008, 0x0400000, (1n << 32n) | 0x0040000n]) expect(run(call(arch, 'personality', p))).toBe(EPERM)
  })

  it('allows ptrace except attaching to pid 1, whose pid the kernel truncates to 32 bits', () => {
    expect(run(call(arch, 'ptrace', 16, 1))).toBe(EPERM)
    expect(run(call(arch, 'ptrace', 0x4206, 1))).toBe(EPERM)
    expect(run(call(arch, 'ptrace', 16, (1n << 32n) | 1n))).toBe(EPERM)
    expect(run(call(arch, 'ptrace', 16, 2))).toBe(ALLOW)
    expect(run(call(arch, 'ptrace', 0, 0))).toBe(ALLOW) // PTRACE_TRACEME
    // a request with high bits is not PTRACE_ATTACH to the kernel (request is a long)
    expect(run(call(arch, 'ptrace', (1n << 32n) | 16n, 1))).toBe(ALLOW)
    expect(run(call(arch, 'process_vm_writev', 1))).toBe(EPERM)
    expect(run(call(arch, 'process_vm_writev', 5))).toBe(ALLOW)
  })

  it('kills another architecture\'s calls and allows the rest', () => {
    const foreign = arch === X64 ? AUDIT_ARCH.I386 : AUDIT_ARCH.ARM
    expect(run({ nr: 20, arch: foreign, args: [] })).toBe(KILL)
    expect(run({ nr: arch.numbers.keyctl as number, arch: foreign, args: [] })).toBe(KILL)
    expect(run({ nr: 0, arch: arch.auditArch, args: [] })).toBe(ALLOW)
    expect(run({ nr: -1, arch: arch.auditArch, args: [] })).toBe(ALLOW) // a tracer skipping a call
    if (arch === X64) {
      expect(run({ nr: 0x40000000 | 39, arch: arch.auditArch, args: [] })).toBe(KILL) // x32 getpid
      expect(run({ nr: 0x40000000 | 250, arch: arch.auditArch, args: [] })).toBe(KILL)
    }
  })

  it('agrees with the policy\'s meaning on any call (property)', () => {
    const numbers = Object.values(arch.numbers)
    const interesting = [0n, 1n, 8n, 16n, 17n, 0x4206n, BigInt(TIOCSTI), BigInt(TIOCLINUX), 0xffffffffn, 0x10000000n, 0x0040000n, 1n << 32n]
    const arg = fc.oneof(
      fc.bigInt({ min: 0n, max: (1n << 64n) - 1n }),
      fc.constantFrom(...interesting),
      fc.tuple(fc.constantFrom(...interesting), fc.bigInt({ min: 0n, max: (1n << 32n) - 1n })).map(([low, high]) => (high << 32n) | low)
    )
    const data = fc.record({
      nr: fc.oneof(fc.constantFrom(...numbers, -1, 0x40000000 | 39), fc.integer({ min: -1, max: 1100 })),
      arch: fc.oneof(fc.constant(arch.auditArch), fc.constantFrom(AUDIT_ARCH.I386, AUDIT_ARCH.ARM, AUDIT_ARCH.X86_64, AUDIT_ARCH.AARCH64)),
      args: fc.array(arg, { minLength: 6, maxLength: 6 })
    })
    fc.assert(fc.property(data, d => { expect(run(d)).toBe(policyVerdict(SANDBOX_SECCOMP_POLICY, arch, d)) }), { numRuns: 3000 })
  })
})

describe('compiling any policy', () => {
  it('matches the reference for random policies with 32- and 64-bit tests (property)', () => {
    const action = fc.oneof(fc.constant({ allow: true as const }), fc.integer({ min: 1, max: 133 }).map(e => ({ errno: e })), fc.constant({ kill: true as const }))
    const value = fc.oneof(fc.bigInt({ min: 0n, max: (1n << 64n) - 1n }), fc.constantFrom(0n, 1n, 0xffffffffn, 1n << 32n, 0xffffffff00000000n))
    const test = fc.record({ arg: fc.constantFrom(0, 1, 2, 3, 4, 5) as fc.Arbitrary<0 | 1 | 2 | 3 | 4 | 5>, bits: fc.constantFrom(32, 64) as fc.Arbitrary<32 | 64>, op: fc.constantFrom('eq', 'any-bits') as fc.Arbitrary<'eq' | 'any-bits'>, value })
    const names = Object.keys(X64.numbers)
    const policy = fc.uniqueArray(fc.record({
      syscall: fc.constantFrom(...names),
      cases: fc.array(fc.record({ when: fc.uniqueArray(test, { maxLength: 3, selector: t => `${t.arg}${t.op}` }), action }), { maxLength: 3 }),
      otherwise: action
    }), { maxLength: 12, selector: r => r.syscall })
    fc.assert(fc.property(policy, fc.array(fc.record({
      nr: fc.constantFrom(...Object.values(X64.numbers), 7),
      arch: fc.constant(X64.auditArch),
      args: fc.array(fc.oneof(value, fc.constantFrom(0n, 1n)), { minLength: 6, maxLength: 6 })
    }), { minLength: 1, maxLength: 20 }), (p: SyscallRule[], calls) => {
      const program = compileSeccomp(p, X64)
      for (const d of calls) expect(runSeccomp(program, d)).toBe(policyVerdict(p, X64, d))
    }), { numRuns: 300 })
  })
})

describe('sandboxSeccomp', () => {
  it('has a program for x86_64 and aarch64, and says so for other processors', () => {
    expect(SYSCALL_ARCHES.map(a => a.name)).toEqual(['x86_64', 'aarch64'])
    expect(sandboxSeccomp('x64')).toMatchObject({ ok: true, arch: 'x86_64' })
    expect(sandboxSeccomp('arm64')).toMatchObject({ ok: true, arch: 'aarch64' })
    const none = sandboxSeccomp('riscv64')
    expect(none.ok).toBe(false)
    if (!none.ok) expect(none.warning).toMatch(/riscv64.*without its seccomp filter/)
  })
})
