/**
 * Syscall numbers of the calls the sandbox filter names, per architecture, from the kernel's
 * tables: arch/x86/entry/syscalls/syscall_64.tbl (x86_64, the 64-bit ABI) and
 * include/uapi/asm-generic/unistd.h (aarch64 uses the generic table). A call an
 * architecture does not have (uselib, modify_ldt on aarch64) is simply absent.
 * Checked against linux-libc-dev 6.1's asm/unistd_64.h and asm-generic/unistd.h.
 */

/** AUDIT_ARCH_* (linux/audit.h): what seccomp_data.arch says for each calling convention. */
export const AUDIT_ARCH = {
  X86_64: 0xc000003e,
  I386: 0x40000003,
  AARCH64: 0xc00000b7,
  ARM: 0x40000028
} as const

/** x86_64's x32 ABI: same audit arch as x86_64, syscall numbers with this bit set. */
export const X32_SYSCALL_BIT = 0x40000000

export interface SyscallArch {
  /** Node's process.arch */
  nodeArch: string
  /** the kernel's name (uname -m) */
  name: string
  auditArch: number
  /** x86_64 only: numbers at or above this are x32 calls */
  x32Bit?: number
  numbers: Readonly<Record<string, number>>
}

const X86_64: Record<string, number> = {
  ioctl: 16,
  socket: 41,
  clone: 56,
  ptrace: 101,
  syslog: 103,
  uselib: 134,
  personality: 135,
  vhangup: 153,
  modify_ldt: 154,
  pivot_root: 155,
  chroot: 161,
  acct: 163,
  mount: 165,
  umount2: 166,
  swapon: 167,
  swapoff: 168,
  reboot: 169,
  create_module: 174,
  init_module: 175,
  delete_module: 176,
  quotactl: 179,
  lookup_dcookie: 212,
  mbind: 237,
  set_mempolicy: 238,
  get_mempolicy: 239,
  kexec_load: 246,
  add_key: 248,
  request_key: 249,
  keyctl: 250,
  migrate_pages: 256,
  unshare: 272,
  move_pages: 279,
  perf_event_open: 298,
  name_to_handle_at: 303,
  open_by_handle_at: 304,
  setns: 308,
  process_vm_writev: 311,
  finit_module: 313,
  kexec_file_load: 320,
  bpf: 321,
  userfaultfd: 323,
  io_uring_setup: 425,
  io_uring_enter: 426,
  io_uring_register: 427,
  open_tree: 428,
  move_mount: 429,
  fsopen: 430,
  fsconfig: 431,
  fsmount: 432,
  fspick: 433,
  clone3: 435,
  mount_setattr: 442,
  quotactl_fd: 443,
  set_mempolicy_home_node: 450
}

const AARCH64: Record<string, number> = {
  lookup_dcookie: 18,
  ioctl: 29,
  umount2: 39,
  mount: 40,
  pivot_root: 41,
  chroot: 51,
  vhangup: 58,
  quotactl: 60,
  acct: 89,
  personality: 92,
  unshare: 97,
  kexec_load: 104,
  init_module: 105,
  delete_module: 106,
  syslog: 116,
  ptrace: 117,
  reboot: 142,
  socket: 198,
  add_key: 217,
  request_key: 218,
  keyctl: 219,
  clone: 220,
  swapon: 224,
  swapoff: 225,
  mbind: 235,
  get_mempolicy: 236,
  set_mempolicy: 237,
  migrate_pages: 238,
  move_pages: 239,
  perf_event_open: 241,
  name_to_handle_at: 264,
  open_by_handle_at: 265,
  setns: 268,
  process_vm_writev: 271,
  finit_module: 273,
  bpf: 280,
  userfaultfd: 282,
  kexec_file_load: 294,
  io_uring_setup: 425,
  io_uring_enter: 426,
  io_uring_register: 427,
  open_tree: 428,
  move_mount: 429,
  fsopen: 430,
  fsconfig: 431,
  fsmount: 432,
  fspick: 433,
  clone3: 435,
  mount_setattr: 442,
  quotactl_fd: 443,
  set_mempolicy_home_node: 450
}

export const SYSCALL_ARCHES: readonly SyscallArch[] = [
  { nodeArch: 'x64', name: 'x86_64', auditArch: AUDIT_ARCH.X86_64, x32Bit: X32_SYSCALL_BIT, numbers: X86_64 },
  { nodeArch: 'arm64', name: 'aarch64', auditArch: AUDIT_ARCH.AARCH64, numbers: AARCH64 }
]

/** The table for Node's process.arch, or undefined (then the sandbox runs without the filter). */
export function syscallArch (nodeArch: string = process.arch): SyscallArch | undefined {
  return SYSCALL_ARCHES.find(a => a.nodeArch === nodeArch)
}
