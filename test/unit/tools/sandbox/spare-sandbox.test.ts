import { spawn } from 'node:child_process'
import fsp from 'node:fs/promises'
import path from 'node:path'
import type { Readable, Writable } from 'node:stream'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { MAX_ARGUMENT_BYTES, mountFingerprint, SPARE_WAITER, spareCanRun, spareKey } from '../../../../src/main/tools/sandbox/spare-sandbox'
import { tempDirs } from '../../../helpers/temp-dir'

const dirs = tempDirs('arbor-spare-')
let dir: string
beforeAll(async () => { dir = await fsp.realpath(await dirs.make()) })
afterAll(() => dirs.cleanup())

/** The waiter outside any sandbox, fed `message` on fd 4 (then EOF): its exit code and output. */
function waiter (message: string): Promise<{ code: number | null; out: string; ready: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', ['-c', SPARE_WAITER], { stdio: ['ignore', 'pipe', 'pipe', 'ignore', 'pipe'], env: { PATH: process.env.PATH, LANG: 'C.UTF-8' } })
    let out = ''
    let ready = ''
    child.stdout?.on('data', (b: Buffer) => { out += b.toString() })
    child.stderr?.on('data', (b: Buffer) => { out += b.toString() })
    const channel = child.stdio[4] as Writable & Readable
    channel.on('data', (b: Buffer) => { ready += b.toString() })
    channel.on('error', () => undefined)
    channel.end(message)
    child.on('error', reject)
    child.on('close', code => resolve({ code, out, ready }))
  })
}

const framed = (command: string): string => `${Buffer.byteLength(command)}\n${command}`

describe('the spare sandbox\'s waiting shell', () => {
  it('runs a whole message as bash -c would, after saying it is ready', async () => {
    const cmd = 'echo "$0 [$1] é ✓"; printf "%s\\n" "a  b" \'c\\\\d\'; exit 7'
    const r = await waiter(framed(cmd))
    expect(r.ready).toBe('r')
    expect(r.out).toBe('bash [] é ✓\na  b\nc\\\\d\n')
    expect(r.code).toBe(7)
    // a command spread over lines, with a NUL-free binary-ish tail
    expect((await waiter(framed('echo one\necho two\n'))).out).toBe('one\ntwo\n')
  })

  it('runs nothing from a short message, a bad length or none at all', async () => {
    for (const message of ['20\necho PLANTED', 'x\necho PLANTED', '-5\necho PLANTED', '', 'echo PLANTED', '999999999999999999999\necho PLANTED']) {
      const r = await waiter(message)
      expect(r.out, message).not.toContain('PLANTED')
      expect(r.code, message).toBe(125)
    }
  })
})

describe('what a spare must match', () => {
  const args = ['--unshare-net', '--bind', '/p', '/p', '--chdir', '/p', '--', 'bash', '-c', 'ulimit -t 3; make']
  const env = { PATH: '/bin' }
  it('the arguments before the command, the environment and the limits, not the command', () => {
    const k = spareKey('bwrap', args, env, { processes: 512 })
    expect(spareKey('bwrap', [...args.slice(0, -1), 'rm -rf /'], env, { processes: 512 })).toBe(k)
    expect(spareKey('bwrap', ['--tmpfs', '/p/secrets', ...args], env, { processes: 512 })).not.toBe(k)
    expect(spareKey('bwrap', args.map(a => (a === 'bash' ? 'sh' : a)), env, { processes: 512 })).not.toBe(k)
    expect(spareKey('bwrap', args, { PATH: '/usr/bin' }, { processes: 512 })).not.toBe(k)
    expect(spareKey('bwrap', args, env, { processes: 64 })).not.toBe(k)
    expect(spareKey('/opt/bwrap', args, env, { processes: 512 })).not.toBe(k)
    expect(() => spareKey('bwrap', ['--unshare-net'], env, {})).toThrow(/without --/)
  })

  it('commands a spare can run: no NUL, shorter than one argument may be', () => {
    expect(spareCanRun('echo hi')).toBe(true)
    expect(spareCanRun('echo \0 hi')).toBe(false)
    expect(spareCanRun('x'.repeat(MAX_ARGUMENT_BYTES - 1))).toBe(true)
    expect(spareCanRun('é'.repeat(MAX_ARGUMENT_BYTES / 2))).toBe(false)
  })

  it('a mounted path keeps its fingerprint through writes, not through a replacement, a move or a new mount table', async () => {
    const root = path.join(dir, 'fp')
    const secrets = path.join(root, 'secrets')
    const token = path.join(root, 'token')
    await fsp.mkdir(secrets, { recursive: true })
    await fsp.writeFile(token, 'one')
    const table = path.join(dir, 'mountinfo')
    await fsp.writeFile(table, '1 0 8:1 / / rw - ext4 /dev/sda1 rw\n')
    const mounted = [secrets, token, path.join(root, 'missing')]
    const fp = mountFingerprint(mounted, table)
    await fsp.writeFile(token, 'two') // written in place
    await fsp.writeFile(path.join(secrets, 'key'), 'k')
    expect(mountFingerprint(mounted, table)).toBe(fp)

    await fsp.writeFile(`${token}.new`, 'three')
    await fsp.rename(`${token}.new`, token) // replaced, as an editor saves
    const fp2 = mountFingerprint(mounted, table)
    expect(fp2).not.toBe(fp)
    await fsp.rename(secrets, `${secrets}.old`)
    await fsp.mkdir(secrets)
    const fp3 = mountFingerprint(mounted, table)
    expect(fp3).not.toBe(fp2)
    await fsp.mkdir(path.join(root, 'missing'))
    const fp4 = mountFingerprint(mounted, table)
    expect(fp4).not.toBe(fp3)
    await fsp.appendFile(table, '2 1 0:5 / /mnt rw - tmpfs tmpfs rw\n')
    expect(mountFingerprint(mounted, table)).not.toBe(fp4)
  })
})
