/** The running node went away or refused this client (its token): what it said, for `arbor: the running node failed: …`. */
export class NodeLostError extends Error {
  constructor (message: string) {
    super(message)
    this.name = 'NodeLostError'
  }
}
