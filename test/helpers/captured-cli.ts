import { runCli } from '../../src/main/cli/run-cli'

export interface CliRun { code: number; out: string; err: string }

/** Runs `arbor <args>` in this process (runCli), with what it prints kept. */
export async function capturedCli (args: string[], env: Record<string, string | undefined>, cwd: string): Promise<CliRun> {
  let out = ''
  let err = ''
  const code = await runCli(args, { out: t => { out += t }, err: t => { err += t }, env, cwd })
  return { code, out, err }
}
