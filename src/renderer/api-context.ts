import { createContext, useCallback, useContext, useSyncExternalStore } from 'react'
import type { ApiClient, ConnectionStatus } from '../shared/api/api-client'

export const ApiContext = createContext<ApiClient | null>(null)

export function useApi (): ApiClient {
  const client = useContext(ApiContext)
  if (client === null) throw new Error('useApi outside <ApiContext.Provider>')
  return client
}

export function useConnectionStatus (client: ApiClient): ConnectionStatus {
  const subscribe = useCallback((fn: () => void) => client.onStatus(fn), [client])
  return useSyncExternalStore(subscribe, () => client.status)
}

/** A message for an error of any type. */
export function errorText (err: unknown): string {
  if (err instanceof Error) return err.message
  return typeof err === 'string' ? err : 'something went wrong'
}
