/** Turns low-level storage failures into errors a user can act on. */
export function storageError (err: unknown, dir: string): Error {
  const e = err as NodeJS.ErrnoException & { message?: string }
  const msg = String(e?.message ?? err)
  if (e?.code === 'ENOSPC' || /no space left/i.test(msg)) {
    return new Error(`the disk holding ${dir} is full; free some space and try again (nothing already saved is lost)`, { cause: err })
  }
  if (/could not be locked|lock/i.test(msg) && /descriptor|LOCK|lock file/i.test(msg)) {
    return new Error(`another Arbor process is using ${dir}; stop it, or talk to it instead of opening the data directory twice`, { cause: err })
  }
  if (e?.code === 'EACCES' || e?.code === 'EPERM') {
    return new Error(`no permission to use ${dir}; check the directory's owner and mode`, { cause: err })
  }
  return err instanceof Error ? err : new Error(msg)
}
