/**
 * Every Arbor node of a user on this machine writes its data directory into a registry in a
 * fixed per-user place (`~/.config/Arbor/nodes/`, itself hidden from tools), so each node's
 * sandbox hides the data and sockets of all of them, not only its own (`arbor serve --data
 * /srv/arbor2` next to the desktop app). One small file per data directory, written
 * atomically: nodes opening at the same moment cannot lose each other's entry.
 */
import crypto from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'
import { writeStateFileSync } from '../../disk/state-file'
import { nodeFsProbe, type FsProbe } from './hidden-paths'

/** More entries than this are not read (a registry should hold a handful). */
export const MAX_REGISTERED = 256
const MAX_ENTRY_BYTES = 8192

export function defaultRegistryDir (home: string): string {
  return path.join(path.resolve(home), '.config', 'Arbor', 'nodes')
}

interface RegistryEntry { dataDir: string; registeredAt: string }

function entryName (dataDir: string): string {
  return crypto.createHash('sha256').update(dataDir).digest('hex').slice(0, 32) + '.json'
}

/** Parses one entry file; undefined for anything that is not one (ignored, never fatal). */
export function parseRegistryEntry (text: string): string | undefined {
  try {
    const v = JSON.parse(text) as Partial<RegistryEntry>
    return typeof v.dataDir === 'string' && path.isAbsolute(v.dataDir) ? path.normalize(v.dataDir) : undefined
  } catch { return undefined }
}

/** The data directories registered in `registryDir` that still exist. */
export function registeredDataDirs (registryDir: string, probe: FsProbe = nodeFsProbe): string[] {
  const names = (probe.list(registryDir) ?? []).filter(n => n.endsWith('.json')).sort().slice(0, MAX_REGISTERED)
  const out: string[] = []
  for (const n of names) {
    const text = probe.readText(path.join(registryDir, n), MAX_ENTRY_BYTES)
    const dir = text === undefined ? undefined : parseRegistryEntry(text)
    if (dir !== undefined && probe.kind(dir) === 'dir') out.push(dir)
  }
  return out
}

/**
 * Records `dataDir` (canonical) in the registry, and drops entries whose directory is gone.
 * Throws if the registry cannot be written: a node whose data the other sandboxes cannot
 * know about should say so.
 */
export function registerDataDir (dataDir: string, registryDir: string): void {
  const real = fs.realpathSync.native(dataDir)
  fs.mkdirSync(registryDir, { recursive: true, mode: 0o700 })
  const file = path.join(registryDir, entryName(real))
  const entry: RegistryEntry = { dataDir: real, registeredAt: new Date().toISOString() }
  writeStateFileSync(file, JSON.stringify(entry) + '\n', { mode: 0o600 })
  for (const n of fs.readdirSync(registryDir)) {
    if (!n.endsWith('.json') || n === path.basename(file)) continue
    const p = path.join(registryDir, n)
    const dir = parseRegistryEntry(nodeFsProbe.readText(p, MAX_ENTRY_BYTES) ?? '')
    if (dir !== undefined && !fs.existsSync(dir)) fs.rmSync(p, { force: true })
  }
}
