/** A conversation reference that names none held here (its own file: the CLI throws it without loading the store). */
export class ConversationNotFoundError extends Error {
  constructor (ref: string, reason = 'no conversation') {
    super(`${reason} matches "${ref}"; \`arbor ls\` lists the conversations`)
    this.name = 'ConversationNotFoundError'
  }
}
