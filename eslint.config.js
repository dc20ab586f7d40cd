import js from '@eslint/js'
import tseslint from 'typescript-eslint'

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
    // Only the Electron shell and the preload may touch Electron (DESIGN.md, Layout).
    files: ['src/**/*.ts', 'src/**/*.tsx'],
    ignores: ['src/main/electron/**', 'src/preload/**'],
    rules: { 'no-restricted-imports': ['error', { paths: ['electron'] }] }
  },
  {
    // Dependency rule: shared imports nothing of ours, history only shared.
    files: ['src/shared/**'],
    rules: { 'no-restricted-imports': ['error', { paths: ['electron'], patterns: ['**/main/**', '**/renderer/**', 'node:*'] }] }
  },
  {
    files: ['src/main/history/**'],
    rules: { 'no-restricted-imports': ['error', { paths: ['electron'], patterns: ['**/sync/**', '**/runtime/**', '**/llm/**', '**/tools/**', '**/api/**', '**/cli/**', '**/node'] }] }
  },
  {
    // disk: plain-Node file helpers for every folder of main (history too): it imports only shared.
    files: ['src/main/disk/**'],
    rules: {
      'no-restricted-imports': ['error', {
        paths: ['electron'],
        patterns: [{ regex: '^\\.\\./(?!\\.\\./shared/)', message: 'src/main/disk imports only src/shared (and node:*)' }]
      }]
    }
  },
  {
    files: ['src/renderer/**'],
    rules: { 'no-restricted-imports': ['error', { paths: ['electron'], patterns: ['node:*', '**/main/**'] }] }
  },
  {
    files: ['bin/**/*.js', 'scripts/**/*.js'],
    languageOptions: { globals: { process: 'readonly', console: 'readonly' } }
  }
)
