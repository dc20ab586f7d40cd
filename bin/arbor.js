#!/usr/bin/env node
// The `arbor` command: runs the built CLI (src/main/cli/main.ts -> out/main/cli.js) on plain Node.
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

const cli = new URL('../out/main/cli.js', import.meta.url)

if (!existsSync(fileURLToPath(cli))) {
  console.error('arbor: out/main/cli.js is missing; run `npm run build` (or `npm install`, which builds via the prepare script).')
  process.exit(1)
}

await import(cli.href)
