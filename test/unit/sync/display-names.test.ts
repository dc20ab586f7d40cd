// The names a device shows for its cluster's members (displayNames in membership.ts), pure: a
// member cannot be shown like another, nor like this device, however it names itself and
// whoever added it; the examples of issue 23, then properties over names made to collide
// (case, width, accents, invisible characters, look-alike letters, names shaped like a
// qualified one) and keys alike in their first characters. fast-check prints the seed and path
// of a failure: replay with fc.assert(..., { seed, path }).
import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { THIS_DEVICE, displayNames, plainName, sameName, type MemberView } from '../../../src/main/sync/cluster/membership'

const key = (c: string, rest = c): string => (c + rest.repeat(64)).slice(0, 64)
const SELF = key('5')

function view (k: string, name: string, addedBy?: string): MemberView {
  return { key: k, since: 0, authority: [], signedName: { name, at: 0 }, ...(addedBy !== undefined ? { addedBy } : {}) }
}
const membersOf = (views: MemberView[]): Map<string, MemberView> => new Map(views.map(v => [v.key, v]))

describe('names as shown', () => {
  it('a device named like this one, and a device it added named so too, are told apart from it and each other', () => {
    const cloud = key('c')
    const planted = key('d', '7')
    const shown = displayNames(membersOf([view(cloud, 'Laptop'), view(planted, 'laptop', cloud), view(key('e'), 'phone')]), { key: SELF, name: 'laptop' })
    expect(shown.get(cloud)).toBe(`Laptop (${cloud.slice(0, 8)})`)
    // its introducer by the name this device shows it with, never as if it were this device
    expect(shown.get(planted)).toBe(`laptop (added by Laptop (${cloud.slice(0, 8)}), ${planted.slice(0, 8)})`)
    expect(shown.get(key('e'))).toBe('phone')
  })

  it('names this device "this device" where it added a device, and qualifies a member that calls itself that', () => {
    const a = key('a')
    const b = key('b')
    const c = key('c')
    const shown = displayNames(membersOf([view(a, 'phone', SELF), view(b, 'Phone'), view(c, 'This  Device', a)]), { key: SELF, name: 'desk' })
    expect(shown.get(a)).toBe(`phone (added by ${THIS_DEVICE}, ${a.slice(0, 8)})`)
    expect(shown.get(c)).toBe(`This  Device (added by phone (${a.slice(0, 8)}), ${c.slice(0, 8)})`)
  })

  it('a look-alike of this device\'s name is qualified; this device\'s own name never is', () => {
    const looks = ['LAPTOP', ' laptop ', 'ｌａｐｔｏｐ', 'lap\u200btop', 'lаptop' /* Cyrillic а */, 'lapt0p', 'laptöp']
    const views = looks.map((n, i) => view(key(String.fromCharCode(97 + i)), n))
    const shown = displayNames(membersOf(views), { key: SELF, name: 'laptop' })
    for (const v of views) expect(shown.get(v.key)).toBe(`${v.signedName?.name as string} (${v.key.slice(0, 8)})`)
    // and a name unlike any other is shown as it is
    expect(displayNames(membersOf([view(key('a'), 'laptop 2')]), { key: SELF, name: 'laptop' }).get(key('a'))).toBe('laptop 2')
  })

  it('a name shaped like another\'s qualified name, or keys alike in their first characters, still give names that differ', () => {
    const a = key('a')
    const b = 'a'.repeat(8) + 'b'.repeat(56) // the same first 8 characters as a
    const c = key('c')
    const shown = displayNames(membersOf([view(a, 'server'), view(b, 'server'), view(c, `server (${a.slice(0, 8)})`)]), { key: SELF, name: 'desk' })
    const names = [...shown.values()]
    expect(new Set(names.map(n => n.toLowerCase())).size).toBe(3)
    expect(shown.get(a)).toContain(a.slice(0, 12))
    expect(shown.get(b)).toContain(b.slice(0, 12))
  })
})

// --- properties ---

const SELF_NAMES = ['laptop', 'Desk', 'this device']
/** names that collide in every way a device's chosen name can */
const NAMES = ['laptop', 'Laptop', 'ｌａｐｔｏｐ', 'lap\u200btop', 'lаptop', 'laptöp', 'lapt0p', 'desk', 'phone', 'Phone ', 'this device', 'THIS DEVICE', 'server', 'laptop (added by this device, aaaaaaaa)']
/** keys drawn so that some share their first 8, 12 or 16 characters */
const keyArb = fc.tuple(fc.constantFrom('aaaaaaaa', 'aaaaaaab', 'bbbbbbbb'), fc.constantFrom('', 'cccc', 'cccccccc'), fc.string({ unit: fc.constantFrom(...'0123456789abcdef'), minLength: 64, maxLength: 64 }))
  .map(([p, q, rest]) => (p + q + rest).slice(0, 64))
const nameArb = fc.oneof(fc.constantFrom(...NAMES), fc.string({ minLength: 1, maxLength: 12 }))

const worldArb = fc.record({
  self: fc.constantFrom(...SELF_NAMES),
  members: fc.uniqueArray(fc.record({ key: keyArb, name: nameArb, by: fc.nat({ max: 12 }) }), { selector: m => m.key, maxLength: 10 })
}).map(({ self, members }) => {
  // an introducer: another member, this device, one no longer a member, or nobody (an act here)
  const pick = (by: number, i: number): string | undefined => by < members.length && by !== i ? members[by]?.key : by === 10 ? SELF : by === 11 ? key('f') : undefined
  return { self, views: members.map((m, i) => view(m.key, m.name, pick(m.by, i))) }
})

describe('names as shown: properties', () => {
  it('no two members are shown alike, none like this device\'s name or "this device"; this device\'s name is kept as it is', () => {
    fc.assert(fc.property(worldArb, ({ self, views }) => {
      const shown = displayNames(membersOf(views), { key: SELF, name: self })
      const names = [...shown.values()]
      for (let i = 0; i < names.length; i++) {
        const n = names[i] as string
        expect(sameName(n, self), `"${n}" reads as this device's name "${self}"`).toBe(false)
        expect(sameName(n, THIS_DEVICE), `"${n}" reads as "${THIS_DEVICE}"`).toBe(false)
        for (let j = i + 1; j < names.length; j++) expect(sameName(n, names[j] as string), `"${n}" and "${names[j] as string}"`).toBe(false)
      }
    }), { numRuns: 1000 })
  })

  it('a qualified member shows its own name, its key\'s start, and its introducer as this device shows it', () => {
    fc.assert(fc.property(worldArb, ({ self, views }) => {
      const shown = displayNames(membersOf(views), { key: SELF, name: self })
      const byKey = membersOf(views)
      for (const v of views) {
        const n = shown.get(v.key) as string
        if (n === plainName(v)) continue
        expect(n.startsWith(`${plainName(v)} (`)).toBe(true)
        expect(n).toContain(v.key.slice(0, 8))
        if (v.addedBy === SELF) expect(n).toContain(`(added by ${THIS_DEVICE}, `)
        else if (v.addedBy !== undefined && byKey.has(v.addedBy)) {
          const intro = shown.get(v.addedBy) as string
          // the introducer's name, qualified by its key's start where it is itself qualified
          const label = intro === plainName(byKey.get(v.addedBy) as MemberView) ? intro : `${plainName(byKey.get(v.addedBy) as MemberView)} (${v.addedBy.slice(0, 8)}`
          expect(n).toContain(`(added by ${label}`)
        }
      }
    }), { numRuns: 500 })
  })

  it('names unlike each other and unlike this device\'s are shown as they are, and the result does not depend on the order', () => {
    fc.assert(fc.property(worldArb, fc.boolean(), ({ self, views }, reverse) => {
      const shown = displayNames(membersOf(views), { key: SELF, name: self })
      expect(displayNames(membersOf(reverse ? [...views].reverse() : views), { key: SELF, name: self })).toEqual(shown)
      const plain = views.map(plainName)
      const apart = plain.every((n, i) => !sameName(n, self) && !sameName(n, THIS_DEVICE) && !n.includes('(') && plain.every((m, j) => i === j || !sameName(n, m)))
      if (apart) for (const v of views) expect(shown.get(v.key)).toBe(plainName(v))
    }), { numRuns: 500 })
  })
})
