/** A storage failure said in words; `reason` for code that reacts to it (a full disk is not a bug). */
export class StorageError extends Error {
  constructor (readonly reason: 'full' | 'locked' | 'permission' | 'read-only', message: string, cause: unknown) {
    super(message, { cause })
    this.name = 'StorageError'
  }
}

/** Turns low-level storage failures into errors a user can act on; others pass through. */
export function storageError (err: unknown, dir: string): Error {
  if (err instanceof StorageError) return err
  // Hypercore and RocksDB wrap the system error ("Batch was not applied", cause: ENOSPC), and
  // RocksDB repeats a sticky "No space left on device" without a code: look through the causes.
  const chain = causes(err)
  const msg = chain.map(e => String((e as { message?: unknown } | null)?.message ?? e)).join(': ')
  const codes = new Set(chain.map(e => (e as NodeJS.ErrnoException | null)?.code))
  if (codes.has('ENOSPC') || codes.has('EDQUOT') || /no space left|disk quota exceeded/i.test(msg)) {
    return new StorageError('full', `the disk holding ${dir} is full; free some space and try again in a few seconds (nothing already saved is lost)`, err)
  }
  if (/could not be locked|lock/i.test(msg) && /descriptor|LOCK|lock file/i.test(msg)) {
    return new StorageError('locked', `another Arbor process is using ${dir}; stop it, or talk to it instead of opening the data directory twice`, err)
  }
  if (codes.has('EACCES') || codes.has('EPERM')) {
    return new StorageError('permission', `no permission to use ${dir}; check the directory's owner and mode`, err)
  }
  if (codes.has('EROFS')) {
    return new StorageError('read-only', `${dir} is on a read-only file system; Arbor cannot save anything there`, err)
  }
  return err instanceof Error ? err : new Error(msg)
}

function causes (err: unknown): unknown[] {
  const out: unknown[] = []
  for (let e = err; e !== undefined && e !== null && out.length < 8; e = (e as { cause?: unknown }).cause) out.push(e)
  return out
}
