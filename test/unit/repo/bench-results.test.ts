import path from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { annotate, gitState, resultsFile, type RunInfo } from '../../../scripts/bench.js'
import { tempDirs } from '../../helpers/temp-dir'
import { ROOT } from '../../helpers/paths'

const dirs = tempDirs()
afterEach(() => dirs.cleanup())

const RUN: RunInfo = {
  bench: 'bench/renderer.ts',
  started: '2025-03-01T23:59:58.000Z',
  time: '2025-03-02T00:00:03.250Z',
  commit: '0179c40',
  dirty: true,
  node: 'v20.20.0',
  loadAverage: [1.5, 0.75, 0.25]
}

describe('the bench runner\'s results file (scripts/bench.js)', () => {
  it('keeps a JSON line\'s fields as they are, in their order, and adds when and on what it ran', () => {
    const line = '{"name":"ui.layout.tree.10000","value":41.2,"unit":"ms","baseline":12.5,"ratio":3.3,"loadAverage":[9,8,7],"nested":{"a":[1,null]}}'
    const out = annotate(line, RUN)
    expect(out).not.toBeNull()
    const parsed = JSON.parse(out as string) as Record<string, unknown>
    expect(Object.keys(parsed)).toEqual(['name', 'value', 'unit', 'baseline', 'ratio', 'loadAverage', 'nested', 'run'])
    expect(parsed).toEqual({ ...JSON.parse(line) as object, run: RUN })
    expect(out).not.toContain('\n')
  })

  it('records a skipped line like any other', () => {
    const out = annotate('{"name":"ui","skipped":"/usr/bin/chromium is missing"}', RUN)
    expect(JSON.parse(out as string)).toEqual({ name: 'ui', skipped: '/usr/bin/chromium is missing', run: RUN })
  })

  it('records nothing of a line that is not a JSON object', () => {
    for (const line of ['', '   ', 'round 0: 41000 entries/s', '{"name":"cut', '[1,2]', 'null', '42', '"text"', 'true']) {
      expect(annotate(line, RUN), line).toBeNull()
    }
  })

  it('names the file by the run\'s UTC date and commit, under bench-results/', () => {
    expect(resultsFile('/repo', new Date('2025-03-01T23:59:58.000Z'), '0179c40')).toBe(path.join('/repo', 'bench-results', '2025-03-01-0179c40.jsonl'))
    expect(resultsFile('/repo', new Date('2025-12-31T00:00:00.000Z'), 'unknown')).toBe(path.join('/repo', 'bench-results', '2025-12-31-unknown.jsonl'))
  })

  it('takes the short commit of a checkout, and says unknown outside one', async () => {
    const here = gitState(ROOT)
    expect(here.commit).toMatch(/^[0-9a-f]{7,}$/)
    expect(typeof here.dirty).toBe('boolean')
    expect(gitState(await dirs.make())).toEqual({ commit: 'unknown', dirty: null })
  })
})
