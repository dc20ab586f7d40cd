// Finds OpenAI-compatible servers running on this machine (first run: a local model
// instead of a key). Each candidate is asked GET /v1/models on 127.0.0.1 with a short
// timeout, all in parallel; those that answer with a model list are reported.

export interface LocalServer {
  name: string
  baseURL: string
  models: string[]
}

export interface LocalServerCandidate {
  name: string
  port: number
}

/** The usual ports of local OpenAI-compatible servers. */
export const LOCAL_SERVER_PORTS: readonly LocalServerCandidate[] = [
  { name: 'Ollama', port: 11434 },
  { name: 'llama.cpp', port: 8080 },
  { name: 'LM Studio', port: 1234 },
  { name: 'vLLM', port: 8000 }
]

export interface DetectOptions {
  candidates?: readonly LocalServerCandidate[]
  /** per server (default 300 ms) */
  timeoutMs?: number
  host?: string
  fetch?: typeof fetch
}

/** The servers that answered, in the order of the candidates. Never rejects. */
export async function detectLocalServers (opts: DetectOptions = {}): Promise<LocalServer[]> {
  const candidates = opts.candidates ?? LOCAL_SERVER_PORTS
  const timeoutMs = opts.timeoutMs ?? 300
  const host = opts.host ?? '127.0.0.1'
  const doFetch = opts.fetch ?? fetch
  const found = await Promise.all(candidates.map(async (c): Promise<LocalServer | undefined> => {
    const baseURL = `http://${host}:${c.port}/v1`
    try {
      const res = await doFetch(`${baseURL}/models`, { signal: AbortSignal.timeout(timeoutMs), headers: { accept: 'application/json' } })
      if (!res.ok) return undefined
      const body = await res.json() as unknown
      const data = (body as { data?: unknown } | null)?.data
      if (!Array.isArray(data)) return undefined
      const models = data
        .map(m => (m as { id?: unknown } | null)?.id)
        .filter((id): id is string => typeof id === 'string' && id !== '')
      return { name: c.name, baseURL, models }
    } catch {
      return undefined
    }
  }))
  return found.filter((s): s is LocalServer => s !== undefined)
}
