// What every area's handlers share: the node, where agents run, the errors meant for the user,
// and the guard that keeps two requests from starting one conversation's agent.
import type { ApiParamsOut } from '../../../shared/api/api-params'
import type { ApiMethod, ApiMethods, NetStateDto } from '../../../shared/api/api'
import type { ArborNode } from '../../node'
import type { AgentLocations } from '../agent-locations'

/** An answer to a request the node cannot carry out as asked: its message is for the user. */
export class ApiError extends Error {
  constructor (message: string) {
    super(message)
    this.name = 'ApiError'
  }
}

export const AGENT_BUSY_MESSAGE = 'the agent is busy with this conversation; stop it or wait'

/** What `p` resolves to; its rejection as an ApiError (the node's own words are for the user). */
export async function asApiError<T> (p: Promise<T>): Promise<T> {
  try {
    return await p
  } catch (err) {
    throw err instanceof ApiError ? err : new ApiError((err as Error).message)
  }
}

export interface CallContext {
  /** aborted when the caller goes away (long requests such as devices.join stop) */
  signal?: AbortSignal
}

export type Handler<M extends ApiMethod> = (p: ApiParamsOut<M>, ctx: CallContext) => Promise<ApiMethods[M]['result']>
/** The handlers of some methods (an area's). */
export type HandlersOf<M extends ApiMethod> = { [K in M]: Handler<K> }

export interface HandlerContext {
  readonly node: ArborNode
  readonly locations: AgentLocations
  /** conversations a request is starting (or moving) an agent for */
  readonly starting: Set<string>
  /** a conversation id from an id or prefix; an ApiError when none or several match */
  resolve (ref: string): string
  netState (): NetStateDto
  /** peers' presence may have changed: tell the clients what moved */
  presenceChanged (): void
}

export function conversationResolver (node: ArborNode): (ref: string) => string {
  return ref => {
    try {
      return node.history.resolve(ref)
    } catch (err) {
      throw new ApiError((err as Error).message)
    }
  }
}
