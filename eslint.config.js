import js from '@eslint/js'
import tseslint from 'typescript-eslint'
import fs from 'node:fs'
import path from 'node:path'
import { ALLOWED, MAY_IMPORT_ELECTRON, NO_NODE_BUILTINS, UNITS, unitOf } from './scripts/dependency-rule.js'

/**
 * The dependency rule (scripts/dependency-rule.js) as no-restricted-imports, a block per folder
 * of src/: a file may not import a file of any unit its unit's ALLOWED list leaves out. Each
 * refused unit is spelled as the relative specifiers that reach its folders' files from there,
 * so a folder's parts (history/index inside history) and same-named folders (shared/api, api)
 * are told apart. This is the editor's early warning; test/unit/repo/dependency-rule.test.ts,
 * which resolves every import to its file, is the authority.
 */
function dependencyRule () {
  const dirs = []
  const walk = dir => {
    dirs.push(dir)
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) if (e.isDirectory()) walk(`${dir}/${e.name}`)
  }
  walk('src')
  const unitOfDir = dir => unitOf(`${dir}/x.ts`)
  const escape = t => t.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
  const specifier = (from, to) => {
    const rel = path.posix.relative(from, to)
    return rel.startsWith('.') ? rel : `./${rel}`
  }
  return dirs.filter(dir => unitOfDir(dir) !== undefined && unitOfDir(dir) !== 'types').map(dir => {
    const unit = unitOfDir(dir)
    const allowed = ALLOWED[unit]
    const refused = new Set(Object.keys(UNITS).filter(u => u !== unit && u !== 'types' && !allowed.includes(u)))
    const regexes = dirs.filter(d => refused.has(unitOfDir(d))).map(d => `^${escape(specifier(dir, d))}/[^/]+$`)
    if (refused.has('root')) regexes.push(`^${escape(specifier(dir, 'src/main/node'))}$`)
    const patterns = [{ regex: regexes.join('|') || '^$', message: `${unit} may import only: ${allowed.join(', ') || 'nothing of ours'} (scripts/dependency-rule.js)` }]
    if (NO_NODE_BUILTINS.includes(unit)) patterns.push({ group: ['node:*'], message: `${unit} runs where Node's modules do not` })
    return {
      files: [`${dir}/*.ts`, `${dir}/*.tsx`],
      rules: { 'no-restricted-imports': ['error', { paths: MAY_IMPORT_ELECTRON.includes(unit) ? [] : ['electron'], patterns }] }
    }
  })
}

export default tseslint.config(
  { ignores: ['out/**', 'node_modules/**', 'scratch/**', 'test-results/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      globals: {
        process: 'readonly', console: 'readonly', setTimeout: 'readonly', clearTimeout: 'readonly',
        setInterval: 'readonly', clearInterval: 'readonly', Buffer: 'readonly', URL: 'readonly',
        performance: 'readonly', queueMicrotask: 'readonly', structuredClone: 'readonly'
      }
    },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
      'no-empty': ['error', { allowEmptyCatch: false }]
    }
  },
  {
    // Only the Electron shell and the preload may touch Electron (DESIGN.md, Layout); the unit blocks below repeat it.
    files: ['src/**/*.ts', 'src/**/*.tsx'],
    ignores: ['src/main/electron/**', 'src/preload/**'],
    rules: { 'no-restricted-imports': ['error', { paths: ['electron'] }] }
  },
  ...dependencyRule(),
  {
    files: ['bin/**/*.js', 'scripts/**/*.js'],
    languageOptions: { globals: { process: 'readonly', console: 'readonly' } }
  }
)
