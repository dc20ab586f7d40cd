import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Real cores and child processes: keep parallelism at the machine's 2 cores.
    maxWorkers: 2
  }
})
