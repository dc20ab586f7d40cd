import js from '@eslint/js'
import tseslint from 'typescript-eslint'
import { ALLOWED, MAY_IMPORT_ELECTRON, NO_NODE_BUILTINS, UNITS } from './scripts/dependency-rule.js'

/**
 * The dependency rule (scripts/dependency-rule.js) as no-restricted-imports, a block per unit:
 * a unit may not import any unit its ALLOWED list leaves out. Patterns match folder names in
 * the specifier, so this is the editor's early warning; test/unit/dependency-rule.test.ts, which
 * resolves every import to its file, is the authority.
 */
function dependencyRule () {
  const inMain = unit => UNITS[unit].startsWith('src/main/')
  // main's folders by name (the root by its file); outside main, a unit refuses main as a whole
  const patternOf = (from, unit) => {
    if (inMain(unit) && !inMain(from)) return '**/main/**'
    if (unit === 'root') return '**/node'
    return `**/${UNITS[unit].slice(inMain(unit) ? 'src/main/'.length : 'src/'.length)}**`
  }
  return Object.entries(ALLOWED).filter(([unit]) => unit !== 'types').map(([unit, allowed]) => {
    const refused = Object.keys(UNITS).filter(u => u !== unit && u !== 'types' && !allowed.includes(u))
    const patterns = [...new Set(refused.map(u => patternOf(unit, u)))]
    if (NO_NODE_BUILTINS.includes(unit)) patterns.push('node:*')
    const where = UNITS[unit]
    return {
      files: where.endsWith('/') ? [`${where}**/*.ts`, `${where}**/*.tsx`] : [where],
      rules: {
        'no-restricted-imports': ['error', {
          paths: MAY_IMPORT_ELECTRON.includes(unit) ? [] : ['electron'],
          patterns: [{ group: patterns, message: `${unit} may import only: ${allowed.join(', ') || 'nothing of ours'} (scripts/dependency-rule.js)` }]
        }]
      }
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
