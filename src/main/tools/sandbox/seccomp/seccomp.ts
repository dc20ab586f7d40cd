/**
 * The seccomp filter of the bash sandbox, handed to bwrap with `--seccomp FD`: a blocklist
 * of the calls a sandboxed shell has no use for, after flatpak's `setup_seccomp`
 * (common/flatpak-run.c), plus what Arbor's threat model adds (no Unix sockets, no
 * io_uring, pid 1 left alone). The policy is data; `compileSeccomp` turns it into a
 * classic BPF program for one architecture, and `policyVerdict` is its reference meaning
 * (the tests check that the program and the reference agree). Pure.
 *
 * Argument tests compare exactly the bits the kernel reads: a parameter declared `int`,
 * `unsigned int` or `pid_t` (ioctl's cmd, socket's family, personality, ptrace's pid) is
 * the low 32 bits of its register, the kernel ignores the rest, so a 64-bit compare could
 * be dodged by setting high bits (flatpak's TIOCSTI bypass, CVE-2019-10063); clone's
 * flags are `unsigned long` but the kernel keeps only lower_32_bits; a `long` (ptrace's
 * request) is compared whole.
 */
import { BpfAssembler, NEXT, SECCOMP_DATA, SECCOMP_RET } from './seccomp-bpf'
import { syscallArch, type SyscallArch } from './seccomp-syscalls'

export const ERRNO = { EPERM: 1, ENOSYS: 38, EAFNOSUPPORT: 97 } as const

export type SeccompAction = { allow: true } | { errno: number } | { kill: true }

export interface ArgTest {
  arg: 0 | 1 | 2 | 3 | 4 | 5
  /** how many bits of the register the kernel reads */
  bits: 32 | 64
  /** eq: equal to value; any-bits: (arg & value) != 0 */
  op: 'eq' | 'any-bits'
  value: bigint
}

export interface SyscallCase { when: ArgTest[]; action: SeccompAction }

export interface SyscallRule {
  syscall: string
  /** tried in order, every test of a case must hold; the first that holds decides */
  cases?: SyscallCase[]
  otherwise: SeccompAction
}

const ALLOW: SeccompAction = { allow: true }
const EPERM: SeccompAction = { errno: ERRNO.EPERM }
const ENOSYS: SeccompAction = { errno: ERRNO.ENOSYS }

// ioctl requests (asm-generic/ioctls.h; the same on x86_64 and aarch64)
export const TIOCSTI = 0x5412
export const TIOCLINUX = 0x541c
// clone flags that make a namespace (linux/sched.h); CLONE_NEWTIME (0x80) is only for
// clone3/unshare: in clone's low byte it is the exit signal
export const CLONE_NAMESPACE_FLAGS = 0x02000000n | 0x04000000n | 0x08000000n | 0x10000000n | 0x20000000n | 0x40000000n | 0x00020000n
export const AF = { UNIX: 1, INET: 2, INET6: 10, NETLINK: 16 } as const
export const PTRACE = { ATTACH: 16n, SEIZE: 0x4206n } as const
/** personality values a program may set: PER_LINUX, PER_LINUX32, and the query 0xffffffff */
export const ALLOWED_PERSONALITIES = [0x0000n, 0x0008n, 0xffffffffn] as const

const eq = (arg: ArgTest['arg'], bits: 32 | 64, value: bigint | number): ArgTest => ({ arg, bits, op: 'eq', value: BigInt(value) })
/** pid 1 of the sandbox's PID namespace is bwrap's init, whose death with bwrap ends the call */
const PID_1 = eq(1, 32, 1)

const denied = (action: SeccompAction, names: string[]): SyscallRule[] => names.map(syscall => ({ syscall, otherwise: action }))

export const SANDBOX_SECCOMP_POLICY: readonly SyscallRule[] = [
  ...denied(EPERM, [
    'syslog', // the kernel log
    'uselib', 'acct', 'quotactl', 'quotactl_fd', 'lookup_dcookie',
    'add_key', 'keyctl', 'request_key', // the kernel keyring is per user, shared with the host session
    'move_pages', 'mbind', 'get_mempolicy', 'set_mempolicy', 'set_mempolicy_home_node', 'migrate_pages', // NUMA: a CVE source, no use here
    'unshare', 'setns', // no new namespaces (a new user namespace gives back every capability inside it)
    'mount', 'umount2', 'pivot_root', 'chroot', // the mount table is bwrap's
    'bpf', 'perf_event_open', 'userfaultfd', // large kernel attack surface; userfaultfd also helps win kernel races
    'kexec_load', 'kexec_file_load', 'init_module', 'finit_module', 'delete_module', 'create_module', 'reboot', 'swapon', 'swapoff',
    'modify_ldt', // x86 LDT: a history of information leaks
    'name_to_handle_at', 'open_by_handle_at' // opening by handle escapes the mount namespace's view
  ]),
  ...denied(ENOSYS, [
    'clone3', // its flags are behind a pointer seccomp cannot read: ENOSYS so libc falls back to clone (CVE-2021-41133)
    'open_tree', 'move_mount', 'fsopen', 'fsconfig', 'fsmount', 'fspick', 'mount_setattr', // the new mount API
    'io_uring_setup', 'io_uring_enter', 'io_uring_register' // io_uring runs socket/connect ops no filter sees
  ]),
  {
    syscall: 'ioctl',
    cases: [
      { when: [eq(1, 32, TIOCSTI)], action: EPERM }, // push input into the terminal (CVE-2017-5226)
      { when: [eq(1, 32, TIOCLINUX)], action: EPERM } // console copy/paste, the same effect (CVE-2023-28100)
    ],
    otherwise: ALLOW
  },
  {
    syscall: 'clone',
    cases: [{ when: [{ arg: 0, bits: 32, op: 'any-bits', value: CLONE_NAMESPACE_FLAGS }], action: EPERM }],
    otherwise: ALLOW
  },
  {
    // Unix sockets: no filesystem socket (Arbor's, the user's session bus, an agent's) can be
    // connected to; socketpair() stays. Only the internet families (on the private loopback)
    // and netlink (getaddrinfo, ip) remain: vsock, AF_ALG, packet, ... are refused.
    syscall: 'socket',
    cases: [
      { when: [eq(0, 32, AF.UNIX)], action: EPERM },
      { when: [eq(0, 32, AF.INET)], action: ALLOW },
      { when: [eq(0, 32, AF.INET6)], action: ALLOW },
      { when: [eq(0, 32, AF.NETLINK)], action: ALLOW }
    ],
    otherwise: { errno: ERRNO.EAFNOSUPPORT }
  },
  {
    // no personality that turns off ASLR (ADDR_NO_RANDOMIZE) or makes data executable
    syscall: 'personality',
    cases: ALLOWED_PERSONALITIES.map(p => ({ when: [eq(0, 32, p)], action: ALLOW })),
    otherwise: EPERM
  },
  {
    // ptrace stays for the call's own processes (strace, gdb): the PID namespace shows no
    // other. Except pid 1, bwrap's init: a tracer could make it outlive bwrap and keep the
    // sandbox alive after the call (its /proc/1/mem is masked by bwrap-args for the same reason).
    syscall: 'ptrace',
    cases: [
      { when: [eq(0, 64, PTRACE.ATTACH), PID_1], action: EPERM },
      { when: [eq(0, 64, PTRACE.SEIZE), PID_1], action: EPERM }
    ],
    otherwise: ALLOW
  },
  { syscall: 'process_vm_writev', cases: [{ when: [eq(0, 32, 1)], action: EPERM }], otherwise: ALLOW }
]

export function actionValue (a: SeccompAction): number {
  if ('allow' in a) return SECCOMP_RET.ALLOW
  if ('kill' in a) return SECCOMP_RET.KILL_PROCESS
  return (SECCOMP_RET.ERRNO | (a.errno & 0xffff)) >>> 0
}

/** What a foreign calling convention gets: i386 `int 0x80` on x86_64, arm32 on aarch64, x32. */
export const FOREIGN_ABI_ACTION: SeccompAction = { kill: true }

const lo = (v: bigint): number => Number(v & 0xffffffffn)
const hi = (v: bigint): number => Number((v >> 32n) & 0xffffffffn)

/** The BPF program of `policy` for one architecture (rules naming a call it lacks are skipped). */
export function compileSeccomp (policy: readonly SyscallRule[], arch: SyscallArch): Buffer {
  const a = new BpfAssembler()
  const rules = new Map<number, SyscallRule>()
  for (const r of policy) {
    const nr = arch.numbers[r.syscall]
    if (nr === undefined) continue
    if (rules.has(nr)) throw new Error(`seccomp policy names ${r.syscall} twice`)
    rules.set(nr, r)
  }

  a.load(SECCOMP_DATA.arch).jeq(arch.auditArch, NEXT, 'kill')
  a.load(SECCOMP_DATA.nr)
  if (arch.x32Bit !== undefined) {
    // x32 numbers share the audit arch; -1 (a tracer's "skip this call") is left to the kernel
    a.jge(arch.x32Bit, NEXT, 'dispatch')
    a.jeq(0xffffffff, 'dispatch', 'kill')
  }
  a.label('dispatch')

  // A binary search over the numbers, then one block per conditional rule; unconditional
  // rules share one return per action.
  const target = (nr: number): string => {
    const r = rules.get(nr) as SyscallRule
    return r.cases === undefined || r.cases.length === 0 ? `ret-${actionValue(r.otherwise)}` : `sys-${nr}`
  }
  const nrs = [...rules.keys()].sort((x, y) => x - y)
  let node = 0
  const tree = (from: number, to: number): void => {
    if (to - from < 4) {
      for (let i = from; i <= to; i++) a.jeq(nrs[i] as number, target(nrs[i] as number))
      a.ja('allow')
      return
    }
    const mid = (from + to + 1) >> 1
    const right = `node-${node++}`
    a.jge(nrs[mid] as number, right)
    tree(from, mid - 1)
    a.label(right)
    tree(mid, to)
  }
  if (nrs.length > 0) tree(0, nrs.length - 1)

  let caseNo = 0
  for (const nr of nrs) {
    const r = rules.get(nr) as SyscallRule
    if (r.cases === undefined || r.cases.length === 0) continue
    a.label(`sys-${nr}`)
    for (const c of r.cases) {
      const fail = `case-${caseNo++}`
      for (const t of c.when) {
        if (t.op === 'eq') {
          if (t.bits === 64) a.load(SECCOMP_DATA.argHigh(t.arg)).jeq(hi(t.value), NEXT, fail)
          a.load(SECCOMP_DATA.argLow(t.arg)).jeq(lo(t.value), NEXT, fail)
        } else {
          const pass = `${fail}-pass-${t.arg}`
          if (t.bits === 64 && hi(t.value) !== 0) {
            a.load(SECCOMP_DATA.argLow(t.arg)).jset(lo(t.value), pass)
            a.load(SECCOMP_DATA.argHigh(t.arg)).jset(hi(t.value), NEXT, fail)
          } else {
            a.load(SECCOMP_DATA.argLow(t.arg)).jset(lo(t.value), NEXT, fail)
          }
          if (t.bits === 64 && hi(t.value) !== 0) a.label(pass)
        }
      }
      a.ret(actionValue(c.action))
      a.label(fail)
    }
    a.ret(actionValue(r.otherwise))
  }

  const shared = new Set<number>()
  for (const r of rules.values()) if (r.cases === undefined || r.cases.length === 0) shared.add(actionValue(r.otherwise))
  for (const v of [...shared].sort((x, y) => x - y)) a.label(`ret-${v}`).ret(v)
  a.label('allow').ret(SECCOMP_RET.ALLOW)
  a.label('kill').ret(actionValue(FOREIGN_ABI_ACTION))
  return a.assemble()
}

/** The struct seccomp_data a filter sees (args as 64-bit register values). */
export interface SeccompData { nr: number; arch: number; args: readonly bigint[] }

function holds (t: ArgTest, args: readonly bigint[]): boolean {
  const mask = t.bits === 32 ? 0xffffffffn : 0xffffffffffffffffn
  const v = (args[t.arg] ?? 0n) & mask
  return t.op === 'eq' ? v === (t.value & mask) : (v & t.value & mask) !== 0n
}

/** What the policy means for one call: the reference the compiled program must match. */
export function policyVerdict (policy: readonly SyscallRule[], arch: SyscallArch, d: SeccompData): number {
  if (d.arch >>> 0 !== arch.auditArch) return actionValue(FOREIGN_ABI_ACTION)
  const nr = d.nr >>> 0
  if (arch.x32Bit !== undefined && nr >= arch.x32Bit && nr !== 0xffffffff) return actionValue(FOREIGN_ABI_ACTION)
  const rule = policy.find(r => arch.numbers[r.syscall] === nr)
  if (rule === undefined) return SECCOMP_RET.ALLOW
  for (const c of rule.cases ?? []) if (c.when.every(t => holds(t, d.args))) return actionValue(c.action)
  return actionValue(rule.otherwise)
}

export type SandboxSeccomp =
  | { ok: true; arch: string; program: Buffer }
  | { ok: false; arch: string; warning: string }

const programs = new Map<string, Buffer>()

/** The sandbox's filter for this machine, or why there is none. */
export function sandboxSeccomp (nodeArch: string = process.arch): SandboxSeccomp {
  const arch = syscallArch(nodeArch)
  if (arch === undefined) {
    return {
      ok: false,
      arch: nodeArch,
      warning: `Arbor has no system-call table for this processor (${nodeArch}), so the bash sandbox runs without its seccomp filter: ` +
        'commands inside it can use the kernel keyring, terminal injection (TIOCSTI), Unix sockets and the other calls the filter refuses on x86_64 and aarch64.'
    }
  }
  let program = programs.get(arch.name)
  if (program === undefined) {
    program = compileSeccomp(SANDBOX_SECCOMP_POLICY, arch)
    programs.set(arch.name, program)
  }
  return { ok: true, arch: arch.name, program }
}
