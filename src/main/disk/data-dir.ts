import os from 'node:os'
import path from 'node:path'

/**
 * The data directory: --data, else ARBOR_DATA, else the per-user application data
 * directory the Electron app also uses (its userData), so the CLI and app share history.
 */
export function dataDir (flag: string | undefined, env: NodeJS.ProcessEnv = process.env, platform: NodeJS.Platform = process.platform): string {
  if (flag !== undefined && flag !== '') return path.resolve(flag)
  if (env.ARBOR_DATA !== undefined && env.ARBOR_DATA !== '') return path.resolve(env.ARBOR_DATA)
  const home = env.HOME ?? env.USERPROFILE ?? os.homedir()
  if (platform === 'darwin') return path.join(home, 'Library', 'Application Support', 'Arbor')
  if (platform === 'win32') return path.join(env.APPDATA ?? path.join(home, 'AppData', 'Roaming'), 'Arbor')
  return path.join(env.XDG_CONFIG_HOME ?? path.join(home, '.config'), 'Arbor')
}
