// Child process of bench/scale.ts: one heavy part per process, so its memory, its heap limit
// and its start are its own. `scale-child.ts MODE ARGS...` prints its result as one JSON line
// on stdout, last; notes go to stderr.
export {}

const [mode, ...args] = process.argv.slice(2)

function need (n: number, usage: string): string[] {
  if (args.length < n) throw new Error(`usage: scale-child.ts ${String(mode)} ${usage}`)
  return args
}

async function main (): Promise<unknown> {
  switch (mode) {
    case 'generate': {
      const [dir, conversations, entries] = need(3, 'DIR CONVERSATIONS ENTRIES') as [string, string, string]
      const { buildDataset } = await import('./scale-dataset')
      return buildDataset(dir, { conversations: Number(conversations), entries: Number(entries) })
    }
    case 'ready': {
      const [dir, work] = need(2, 'DATA_DIR WORK_DIR') as [string, string]
      const { nodeReady } = await import('./scale-node')
      return nodeReady(dir, work)
    }
    case 'open-all': {
      const [dir, work] = need(2, 'DATA_DIR WORK_DIR') as [string, string]
      const { openAll } = await import('./scale-node')
      return openAll(dir, work)
    }
    case 'sync': {
      const [holder, work, runs] = need(3, 'HOLDER_DIR WORK_DIR RUNS') as [string, string, string]
      const { initialSync } = await import('./scale-sync')
      return initialSync(holder, work, Number(runs))
    }
    case 'append': {
      const [source, work, runs] = need(3, 'SOURCE_DIR WORK_DIR RUNS') as [string, string, string]
      const { appendThroughput } = await import('./scale-append')
      return appendThroughput(source, work, Number(runs))
    }
    default:
      throw new Error(`unknown mode ${String(mode)}`)
  }
}

const result = await main()
process.stdout.write(JSON.stringify(result) + '\n')
