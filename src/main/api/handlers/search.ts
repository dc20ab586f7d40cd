// search.query: full-text search of every conversation and branch (history/search-index.ts).
import { asApiError, type HandlerContext, type HandlersOf } from './handler-context'

export function searchHandlers (c: HandlerContext): HandlersOf<'search.query'> {
  return {
    'search.query': async p => asApiError(c.node.search.query(p.text, {
      ...(p.limit !== undefined ? { limit: p.limit } : {}),
      ...(p.cursor !== undefined ? { cursor: p.cursor } : {})
    }))
  }
}
