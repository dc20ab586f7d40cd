import { runCli } from '../../src/main/cli/run-cli'

export interface CliRun { code: number; out: string; err: string }

/** Runs `arbor <args>` in this process (runCli), with what it prints kept. */
export async function capturedCli (args: string[], env: Record<string, string | undefined>, cwd: string): Promise<CliRun> {
  let out = ''
  let err = ''
  const code = await runCli(args, { out: t => { out += t }, err: t => { err += t }, env, cwd })
  return { code, out, err }
}

/**
 * `arbor …` in this process on `data`, the key from the environment going to the model server at
 * `baseURL` only (OPENAI_BASE_URL names it); `workspaces`: the tools' workspaces, outside the data
 * directory, which they may not see.
 */
export function cliWithServer (data: string, baseURL: string, workspaces?: string): (...args: string[]) => Promise<CliRun> {
  const env = { ARBOR_DATA: data, HOME: data, OPENAI_API_KEY: 'sk-local', OPENAI_BASE_URL: baseURL, PATH: process.env.PATH, ...(workspaces !== undefined ? { ARBOR_WORKSPACES: workspaces } : {}) }
  return async (...args) => capturedCli(args, env, data)
}
