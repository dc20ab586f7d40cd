import { afterEach, describe, expect, it } from 'vitest'
import fs from 'node:fs'
import path from 'node:path'
import { COMMAND_OPTIONS, CliUsageError, OPTIONS, parseCommandLine, type CommandName, type OptionName } from '../../../src/main/cli/cli-options'
import { runCli } from '../../../src/main/cli/run-cli'
import { tempDirs } from '../../helpers/temp-dir'

const dirs = tempDirs()
afterEach(() => dirs.cleanup())

const commands = Object.keys(COMMAND_OPTIONS) as CommandName[]
const options = Object.keys(OPTIONS) as OptionName[]
const COMMON: OptionName[] = ['data', 'help', 'version']

/** argv for one option: a value after it if it takes one. */
function flag (o: OptionName): string[] {
  return OPTIONS[o].type === 'boolean' ? [`--${o}`] : [`--${o}`, 'x']
}

function usageError (argv: string[]): CliUsageError {
  try {
    parseCommandLine(argv)
  } catch (err) {
    if (err instanceof CliUsageError) return err
    throw err
  }
  throw new Error(`${argv.join(' ')} parsed without an error`)
}

describe('each command takes only its own options', () => {
  it('accepts every option of every command, with --data', () => {
    for (const c of commands) {
      for (const o of [...COMMAND_OPTIONS[c], ...COMMON]) {
        const line = parseCommandLine([c, 'arg', ...flag(o)])
        expect(line.command, `${c} --${o}`).toBe(c)
        expect(line.args).toEqual(['arg'])
        expect(line.values[o], `${c} --${o}`).toBe(OPTIONS[o].type === 'boolean' ? true : 'x')
      }
    }
  })

  it('refuses every foreign option of every command, naming the options the command takes', () => {
    let refused = 0
    for (const c of commands) {
      const own: readonly OptionName[] = COMMAND_OPTIONS[c]
      for (const o of options.filter(o => !own.includes(o) && !COMMON.includes(o))) {
        const err = usageError([c, ...flag(o)])
        expect(err.message, `${c} --${o}`).toContain(`--${o} is not an option of \`arbor ${c}\``)
        for (const mine of own) expect(err.message, `${c} --${o}`).toContain(`--${mine}`)
        expect(err.exitCode).toBe(2)
        refused++
      }
    }
    expect(refused).toBeGreaterThan(commands.length * 10)
  })

  it('says so for a short option or one given as --opt=value', () => {
    expect(usageError(['serve', '--provider=fake']).message).toMatch(/^--provider is not an option of `arbor serve`; it takes --bootstrap, --name, --port, --host, --offline \(and --data\)$/)
    expect(usageError(['ls', '--title', 't', '--json']).message).toContain('it takes --json (and --data)')
    expect(usageError(['tree', '--json']).message).toContain('it takes no options but --data')
    expect(usageError(['serve', '--bogus']).message).toMatch(/Unknown option '--bogus'/)
    expect(usageError(['nope']).message).toMatch(/unknown command "nope"/)
  })

  it('`arbor serve --provider fake` exits 2 with one line saying what serve takes, before starting anything', async () => {
    let out = ''
    let err = ''
    const data = path.join(await dirs.make(), 'data')
    const code = await runCli(['serve', '--provider', 'fake'], { out: t => { out += t }, err: t => { err += t }, env: { ARBOR_DATA: data, ARBOR_BOOTSTRAP: '127.0.0.1:9' }, cwd: '/' })
    expect(code).toBe(2)
    expect(out).toBe('')
    expect(err).toBe('arbor: --provider is not an option of `arbor serve`; it takes --bootstrap, --name, --port, --host, --offline (and --data)\n')
    expect(fs.existsSync(data)).toBe(false) // no node was started on it
  })
})
