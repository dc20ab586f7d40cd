import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { DEV, linearBranch, PEER } from '../../helpers/linear-branch'
import { DEFAULT_MAX_STEPS, limitReached, stepsInTurn, tokensSpent } from '../../../src/main/runtime/agent/turn-limits'
import { turnLimits } from '../../../src/main/runtime/agent/agent-config'
import { BODY_SCHEMAS } from '../../../src/shared/entry/entry'


const branch = linearBranch
const user = (text: string) => ({ kind: 'user' as const, body: { text } })
const step = (input = 0, output = 0) => ({ kind: 'assistant' as const, agent: 'agent#0', body: { text: '', usage: { input, output } } })
const limitStop = (by = DEV) => ({ kind: 'agent.stopped' as const, body: { epoch: 0, reason: 'done' as const, limit: 'steps' }, by })

describe('turn limits (turn-limits.ts)', () => {
  it('counts the model steps of the turn: from the latest user message or this device\'s latest stop at the step limit', () => {
    expect(stepsInTurn(branch(user('a'), step(), step(), user('b'), step()), DEV)).toBe(1)
    expect(stepsInTurn(branch(user('a'), step(), step(), limitStop(), step()), DEV)).toBe(1)
    // a peer's stop buys this device's agent nothing
    expect(stepsInTurn(branch(user('a'), step(), step(), limitStop(PEER), step()), DEV)).toBe(3)
    expect(stepsInTurn(branch(), DEV)).toBe(0)
  })

  it('counts the tokens of this device\'s steps on every branch, not a peer\'s', () => {
    const b = branch(user('a'), step(100, 10), { ...step(1_000_000, 1), by: PEER }, step(5, 5))
    expect(tokensSpent(b, DEV)).toBe(120)
  })

  it('says which limit, the budget before the steps, and nothing below both', () => {
    expect(limitReached({ maxSteps: 3 }, 2, 1e9)).toBeUndefined()
    expect(limitReached({ maxSteps: 3 }, 3, 0)).toMatchObject({ limit: 'steps', message: expect.stringMatching(/after 3 model steps.*Send a message, or resume/) as unknown })
    expect(limitReached({ maxSteps: 3, tokenBudget: 100 }, 3, 100)).toMatchObject({ limit: 'tokens', message: expect.stringMatching(/100 tokens of its 100-token budget.*raise the budget/) as unknown })
    expect(limitReached({ maxSteps: 3, tokenBudget: 100 }, 0, 99)).toBeUndefined()
  })

  it('the conversation\'s own setting wins over the node\'s, then the default', () => {
    expect(turnLimits({}, undefined)).toEqual({ maxSteps: DEFAULT_MAX_STEPS })
    expect(turnLimits({}, { maxSteps: 9 })).toEqual({ maxSteps: 9 })
    expect(turnLimits({ maxSteps: 4, tokenBudget: 1000 }, { maxSteps: 9 })).toEqual({ maxSteps: 4, tokenBudget: 1000 })
  })

  it('a stop at a limit is a body an older version reads: its agent.stopped schema (version 2, as it shipped) accepts it', () => {
    const v2 = z.object({ epoch: z.number().int().nonnegative(), reason: z.enum(['done', 'cancelled', 'superseded', 'crash-loop', 'error']), by: z.object({ device: z.string(), epoch: z.number() }).optional(), message: z.string().optional() })
    const body = { epoch: 1, reason: 'done', message: 'stopped after 50 model steps', limit: 'steps' }
    expect(v2.safeParse(body).success).toBe(true)
    // and a limit a newer version adds does not make this one refuse the body
    expect(BODY_SCHEMAS['agent.stopped'].safeParse({ ...body, limit: 'minutes' }).success).toBe(true)
  })
})
