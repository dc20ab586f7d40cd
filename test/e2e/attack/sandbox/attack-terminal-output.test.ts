// A model (prompt-injected) and the commands it runs print terminal control sequences, hoping
// `arbor` echoes them to the user's terminal: set the clipboard (OSC 52), the title, a
// hyperlink, clear the screen, switch to the alternate screen, make the terminal answer as if
// typed (device status reports), DCS/APC/PM/SOS strings, 8-bit C1 forms, and \r or backspace
// to hide a shown line. The real `arbor` process (the build) must print none of it as control.
import { afterEach, describe, expect, it } from 'vitest'
import { spawn, spawnSync } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { tempDirs, until } from '../../../helpers/temp-dir'

const dirs = tempDirs('arbor-attack-terminal-')
afterEach(() => dirs.cleanup())

const BIN = path.resolve('bin/arbor.js')
const FORBIDDEN = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/ // eslint-disable-line no-control-regex

const E = '\x1b'
/** Everything at once, as the model's text. */
const HOSTILE = `${E}]52;c;cm0gLXJmIH4K${'\x07'}${E}]0;pwned${E}\\${E}]8;;http://evil.example/${E}\\link${E}]8;;${E}\\` +
  `${E}[2J${E}[H${E}[?1049h${E}[6n${E}[>c${E}P+q544e${E}\\${E}_apc${E}\\${E}^pm${E}\\${E}Xsos${E}\\` +
  `\u009b2J\u009d0;eight-bit\u009c\u0090dcs\u009c\u0085${E}${E}c safe\rHIDDEN\b\b\b\b\b\b\x00\x7f`

/** The same, printed by bash in the sandbox (printf's escapes), then a line hidden by \r. */
const PRINTF = String.raw`printf '\033]52;c;cm0gLXJmIH4K\007\033]2;pwned\007\033[2J\033[?1049h\033[6n\033P1$r\033\\\033_x\033\\\233J\302\233J\302\235t\007 '; printf 'rm -rf ~\rls -l\n'; printf 'bs: abc\b\b\bxyz\n'`

function arbor (env: NodeJS.ProcessEnv, ...args: string[]): { code: number | null; out: Buffer; err: Buffer } {
  const r = spawnSync(process.execPath, [BIN, ...args], { env, timeout: 60_000 })
  return { code: r.status, out: r.stdout, err: r.stderr }
}

/** No control byte, and decoded as UTF-8 (as a terminal does) no control character either. */
function expectInert (what: string, b: Buffer): string {
  for (const byte of [0x1b, 0x07, 0x08, 0x0d, 0x00, 0x7f]) expect(b.includes(byte), `${what} holds byte 0x${byte.toString(16)}`).toBe(false)
  const text = b.toString('utf8')
  expect(text, what).not.toMatch(FORBIDDEN)
  return text
}

/** Chats with the hostile scripted model; checks what reached stdout and stderr; returns the conversation. */
async function hostileChat (env: NodeJS.ProcessEnv): Promise<string> {
  const work = await dirs.make()
  const script = path.join(work, '..', path.basename(work) + '-script.json')
  fs.writeFileSync(script, JSON.stringify([
    { text: `before the tool ${HOSTILE}`, toolCalls: [{ name: 'bash', args: { command: `${PRINTF} # ${E}]0;in the command${'\x07'}` } }] },
    { text: `after the tool ${HOSTILE} done`, chunkSize: 3 } // cut into small chunks: sequences split between them
  ]))
  const chat = arbor(env, 'chat', '--new', `hi ${E}]0;title from the user${'\x07'}`, '--provider', 'fake', '--script', script, '--cwd', work)
  fs.rmSync(script)
  const out = expectInert('chat stdout', chat.out)
  expectInert('chat stderr', chat.err)
  expect(chat.code, chat.err.toString()).toBe(0)
  // what was attempted stays visible, inert
  expect(out).toContain('before the tool ^[]52;c;cm0gLXJmIH4K^G^[]0;pwned^[\\')
  expect(out).toContain('rm -rf ~^Mls -l') // the line \r meant to hide is shown
  expect(out).toContain('bs: abc^H^H^Hxyz')
  expect(out).toContain('safe^MHIDDEN^H^H^H^H^H^H')
  expect(out).toContain('done')
  return /conversation ([0-9a-f]{64})/.exec(out)?.[1] as string
}

describe('arbor prints what a model or a tool wrote as text, never as terminal control', () => {
  it('chat, show, tree, ls and export md are inert; export json keeps every byte', async () => {
    expect(fs.existsSync(path.resolve('out/main/cli.js')), 'run `npm run build` first').toBe(true)
    const data = await dirs.make()
    const env = { ...process.env, ARBOR_DATA: data, HOME: data }
    const conv = await hostileChat(env)

    for (const args of [['show', conv], ['tree', conv], ['ls'], ['export', conv, '--format', 'md'], ['ls', '--json']]) {
      const r = arbor(env, ...args)
      expect(r.code, r.err.toString()).toBe(0)
      expectInert(args.join(' '), r.out)
    }
    // the lossless form: every entry as it is, escaped as JSON
    const json = arbor(env, 'export', conv, '--format', 'json')
    const texts = (JSON.parse(expectInert('export json', json.out)) as { entries: Array<{ body: { text?: string } }> }).entries.map(e => e.body.text)
    expect(texts).toContain(`after the tool ${HOSTILE} done`)
  })

  it('so does chat through a running node (`arbor serve`)', async () => {
    const data = await dirs.make()
    const env = { ...process.env, ARBOR_DATA: data, HOME: data }
    const node = spawn(process.execPath, [BIN, 'serve', '--offline', '--port', '0', '--bootstrap', '127.0.0.1:1'], { env, stdio: ['ignore', 'pipe', 'pipe'] })
    let said = ''
    node.stdout.on('data', (d: Buffer) => { said += d.toString() })
    node.stderr.on('data', (d: Buffer) => { said += d.toString() })
    const exited = new Promise(resolve => node.on('exit', resolve))
    try {
      await until(() => said.includes('now works through this node'), `the node to serve (it said: ${said})`, 30_000)
      await hostileChat(env) // the node holds the store: the chat can only have run through it
      expect(expectInert('ls', arbor(env, 'ls').out)).toContain('hi ^[]0;title from the user^G')
    } finally {
      node.kill('SIGTERM')
      await exited
    }
  })
})
