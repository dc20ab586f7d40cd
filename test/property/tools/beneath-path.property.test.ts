// Properties of the pure path handling under the file tools (beneath-path.ts, writeProtection):
// whatever the model sends — `..`, absolute paths, empty names, NUL, very long paths, odd
// spellings of `.git` — the names walked never climb out of the working directory, and a
// write never names git's directory. A failure prints fast-check's seed and path: replay
// with fc.assert(..., { seed, path }).
import path from 'node:path'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { componentsBeneath, isGitName, linkedPath, MAX_NAME_BYTES, MAX_PATH_BYTES, nameError, pathTextError } from '../../../src/main/tools/paths/beneath-path'
import { writeProtection } from '../../../src/main/tools/paths/path-policy'
import { PROTECTED_IN_CWD } from '../../../src/main/tools/sandbox/bwrap-args'
import { isInside } from '../../../src/main/tools/sandbox/hidden-paths'

const RUNS = process.env.ARBOR_LONG !== undefined ? 5000 : 300

/** Names a hostile path is made of: traversal, separators, dots, NUL, unicode, long runs. */
const nameArb = fc.oneof(
  fc.constantFrom('..', '.', '', '...', '.git', 'a', 'b', '\0', '..\0', ' ', '~', 'proj', 'root'),
  fc.string({ maxLength: 8 }),
  fc.string({ unit: 'binary', maxLength: 6 }),
  fc.nat({ max: 300 }).map(n => 'x'.repeat(n))
)
const relArb = fc.array(nameArb, { maxLength: 12 }).map(ns => ns.join('/'))
const pathArb = fc.oneof(relArb, relArb.map(r => '/' + r), fc.constantFrom('', '/', '//', '/..', '../..', 'a/../../b', '/var/tmp/r/proj/../proj2'))
const ROOT = '/var/tmp/r/proj'

describe('componentsBeneath', () => {
  it('names only what lies below the root, and exactly that', () => {
    fc.assert(fc.property(pathArb, p => {
      const abs = path.resolve(ROOT, p)
      const names = componentsBeneath(abs, ROOT)
      if (names === undefined) {
        expect(isInside(abs, ROOT)).toBe(false)
        return
      }
      expect(isInside(abs, ROOT)).toBe(true)
      for (const n of names) {
        expect(n).not.toBe('')
        expect(n).not.toBe('.')
        expect(n).not.toBe('..')
        expect(n.includes('/')).toBe(false)
      }
      expect(path.join(ROOT, ...names)).toBe(abs)
    }), { numRuns: RUNS })
  })

  it('refuses an absolute path outside, whatever its shape', () => {
    fc.assert(fc.property(relArb, r => {
      const abs = path.resolve('/', r)
      expect(componentsBeneath(abs, ROOT) !== undefined).toBe(isInside(abs, ROOT))
      // below a sibling sharing the root's name as a prefix is outside, unless `..` leads back
      const sibling = path.resolve(ROOT + '2', r)
      expect(componentsBeneath(sibling, ROOT) !== undefined).toBe(isInside(sibling, ROOT))
    }), { numRuns: RUNS })
    expect(componentsBeneath(ROOT + '2', ROOT)).toBeUndefined()
    expect(componentsBeneath(ROOT + '2/a', ROOT)).toBeUndefined()
  })

  it('a symlink target joined on the walk is normalized; where it leads is decided by componentsBeneath alone', () => {
    const safeName = fc.string({ minLength: 1, maxLength: 6 }).filter(n => !n.includes('/') && n !== '.' && n !== '..')
    fc.assert(fc.property(fc.array(safeName, { maxLength: 4 }), pathArb, fc.array(safeName, { maxLength: 3 }), (before, target, after) => {
      const to = linkedPath(ROOT, before, target, after)
      expect(path.isAbsolute(to)).toBe(true)
      expect(path.normalize(to)).toBe(to)
      const names = componentsBeneath(to, ROOT)
      if (names !== undefined) expect(path.join(ROOT, ...names)).toBe(to)
    }), { numRuns: RUNS })
  })
})

describe('pathTextError and nameError', () => {
  it('refuse NUL anywhere, and paths or names too long; nothing else', () => {
    fc.assert(fc.property(pathArb, p => {
      const bad = pathTextError(p)
      const expected = p.includes('\0') || Buffer.byteLength(p) > MAX_PATH_BYTES
      expect(bad !== undefined).toBe(expected)
      const names = p.split('/')
      expect(nameError(names) !== undefined).toBe(names.some(n => Buffer.byteLength(n) > MAX_NAME_BYTES))
    }), { numRuns: RUNS })
    expect(pathTextError('a'.repeat(MAX_PATH_BYTES))).toBeUndefined()
    expect(pathTextError('é'.repeat(MAX_PATH_BYTES / 2 + 1))).toMatch(/4098 bytes long/)
    expect(pathTextError(42)).toBe('the path must be a string')
  })
})

/** `.git` as another file system may spell it. */
const gitSpellingArb = fc.tuple(
  fc.array(fc.boolean(), { minLength: 4, maxLength: 4 }),
  fc.constantFrom('', '.', ' ', '..', ' .', '. '),
  fc.nat({ max: 4 }),
  fc.constantFrom('\u200c', '\u200d', '\u200e', '\u202a', '\ufeff', '\u206a')
).map(([upper, tail, at, ignorable]) => {
  const base = [...'.git'].map((c, i) => (upper[i] === true ? c.toUpperCase() : c)).join('') + tail
  return at === 0 ? base : base.slice(0, at) + ignorable + base.slice(at)
})

describe('writes and git', () => {
  it('every spelling of .git is git\'s, at any depth', () => {
    fc.assert(fc.property(gitSpellingArb, fc.array(fc.string({ minLength: 1, maxLength: 5 }), { maxLength: 4 }), fc.array(fc.string({ minLength: 1, maxLength: 5 }), { maxLength: 4 }), (git, before, after) => {
      expect(isGitName(git)).toBe(true)
      expect(writeProtection([...before, git, ...after])).toMatch(/is run by programs outside the sandbox/)
    }), { numRuns: RUNS })
    expect(isGitName('GIT~1')).toBe(true)
  })

  it('names without "git" in them are not, and only the listed files are protected at the top', () => {
    const plain = fc.string({ minLength: 1, maxLength: 8 }).filter(n => !/git/i.test(n.replace(/[\u200c-\u200f\u202a-\u202e\u206a-\u206f\ufeff]/g, '')))
    fc.assert(fc.property(fc.array(plain, { minLength: 1, maxLength: 5 }), names => {
      expect(isGitName(names[0] as string)).toBe(false)
      const top = (names[0] as string).toLowerCase()
      const listed = PROTECTED_IN_CWD.some(p => p.toLowerCase() === top || p.toLowerCase().startsWith(top + '/'))
      if (!listed) expect(writeProtection(names)).toBeUndefined()
      // one level down, the start-up files are ordinary files
      expect(writeProtection(['sub', ...names])).toBeUndefined()
    }), { numRuns: RUNS })
    for (const p of PROTECTED_IN_CWD) expect(writeProtection(p.split('/'))).toMatch(/is run by programs outside/)
  })
})
