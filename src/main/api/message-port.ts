// The port the API is served on in the desktop app (src/main/api/port-server.ts): kept here,
// beside its transport, so the API does not import the Electron shell.
/** A message port as Electron's MessagePortMain has it (Node's worker_threads ports through a thin adapter). */
export interface MessagePortLike {
  postMessage (message: unknown): void
  on (event: 'message', listener: (e: { data: unknown }) => void): unknown
  on (event: 'close', listener: () => void): unknown
  start (): void
  close (): void
}
