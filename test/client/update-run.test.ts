/**
 * `updateRun` from `svcjs` in a process with no task runtime: it goes over
 * HTTP to the task server `SVC_TASK_URL` names, with `SVC_TASK_SECRET`,
 * resolves to the run's answer, and rebuilds each refusal as the error the
 * in-process call throws (same class, code, status and message); a bad
 * argument is a `TypeError` before any request leaves.
 */
import * as v from 'valibot'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import {
  getActiveTaskRuntime,
  HttpError,
  type RuntimeApiRoute,
  RunFinishedError,
  RunNotFoundError,
  setActiveTaskRuntime,
  type TaskContext,
  type TaskRuntime,
  TooManyUpdatesError,
  UpdateFailedError,
  UpdateNotHandledError,
  UpdateTimeoutError,
  updateRun,
  ValidationError,
} from '../../src/index.ts'
import { MAX_PENDING_UPDATES } from '../../src/runtime/tasks/store/update-records.ts'
import { serve, until } from '../http/_helpers.ts'

const SECRET = 'update-client-secret-0123456789abcdef'
const AUTH = { authorization: `Bearer ${SECRET}` }

const ROUTES: RuntimeApiRoute[] = [
  {
    path: '/api/cart',
    module: {
      kind: 'task',
      POST: async (ctx: TaskContext) => {
        const items: string[] = []
        ctx.onUpdate('add', {
          input: v.object({ item: v.pipe(v.string(), v.minLength(1)) }),
          handler: ({ item }) => {
            if (item === 'bomb') throw new Error('no bombs in carts')
            items.push(item)
            return { count: items.length }
          },
        })
        await ctx.step.waitForSignal('checkout', 'checkout')
        return items
      },
    },
  },
]

let runtime: TaskRuntime

/** A server whose runtime is not this process's active one: `updateRun` goes over HTTP to it. */
async function start() {
  const server = await serve({ apiRoutes: ROUTES, env: { NODE_ENV: 'production', SVC_TASK_SECRET: SECRET } })
  runtime = server.runtime
  setActiveTaskRuntime(null)
  vi.stubEnv('SVC_TASK_URL', server.url)
  vi.stubEnv('SVC_TASK_SECRET', SECRET)
  const cart = async (delaySeconds?: number) => {
    const headers = delaySeconds === undefined ? AUTH : { ...AUTH, 'svc-delay-seconds': String(delaySeconds) }
    const { id } = (await (await fetch(`${server.url}/__tasks/cart`, { method: 'POST', headers })).json()) as { id: string }
    const status = delaySeconds === undefined ? 'suspended' : 'scheduled'
    await until(async () => (await runtime.getRun(id))?.status === status)
    return id
  }
  return { server, cart }
}

/** What `promise` rejected with. */
const rejection = (promise: Promise<unknown>) =>
  promise.then(
    () => {
      throw new Error('expected a rejection')
    },
    (error: unknown) => error as Error & Record<string, unknown>,
  )

/** The fields an in-process error and its rebuilt twin share. */
const shape = (error: Error & Record<string, unknown>) => ({
  class: error.constructor,
  name: error.name,
  code: error.code,
  status: error.status,
  message: error.message,
})

let active: TaskRuntime | undefined
beforeEach(() => {
  active = getActiveTaskRuntime()
})
afterEach(() => {
  vi.unstubAllEnvs()
  setActiveTaskRuntime(active ?? null)
})

describe('updateRun() over HTTP', () => {
  it("resolves to the handler's answer; an id again gets the same answer", async () => {
    const { cart } = await start()
    const id = await cart()
    expect(await updateRun(id, 'add', { item: 'apple' }, { id: 'u-1' })).toEqual({ count: 1 })
    expect(await updateRun(id, 'add', { item: 'pear' }, { id: 'u-1', timeoutSeconds: 5 })).toEqual({ count: 1 })
    expect(await updateRun<{ count: number }>(id, 'add', { item: 'pear' })).toEqual({ count: 2 })
    expect((await runtime.listUpdates(id)).map((u) => u.id)).toEqual(['u-1', expect.any(String)])
  })

  it('rebuilds each refusal as the error the in-process call throws', async () => {
    const { cart } = await start()
    const id = await cart()
    // Each asked over HTTP, then in-process with the same id: the kept answer, the same error.
    const both = async (name: string, data: unknown, updateId: string) => {
      const remote = await rejection(updateRun(id, name, data, { id: updateId }))
      const local = await rejection(runtime.updateRun(id, name, data, { id: updateId }))
      expect(shape(remote)).toEqual(shape(local))
      return remote
    }
    const failed = await both('add', { item: 'bomb' }, 'boom')
    expect(failed).toBeInstanceOf(UpdateFailedError)
    expect(failed).toMatchObject({ status: 422, code: 'UPDATE_FAILED', runId: id, updateId: 'boom' })
    expect(failed.message).toBe(`Update "add" (boom) of run "${id}" failed: no bombs in carts`)
    const invalid = await both('add', { item: '' }, 'bad')
    expect(invalid).toBeInstanceOf(ValidationError)
    expect((invalid as unknown as ValidationError).details).toEqual([expect.objectContaining({ path: ['item'] })])
    const unhandled = await both('remove', undefined, 'nope')
    expect(unhandled).toBeInstanceOf(UpdateNotHandledError)
    expect(unhandled).toMatchObject({ status: 404, code: 'UPDATE_NOT_HANDLED', runId: id })
    const unknown = await rejection(updateRun('no-such-run', 'add', { item: 'x' }))
    expect(shape(unknown)).toEqual(shape(await rejection(runtime.updateRun('no-such-run', 'add', { item: 'x' }))))
    expect(unknown).toBeInstanceOf(RunNotFoundError)
    await runtime.sendSignal(id, 'checkout')
    expect(await runtime.waitForRun(id)).toMatchObject({ status: 'completed' })
    const finished = await rejection(updateRun(id, 'add', { item: 'late' }))
    expect(shape(finished)).toEqual(shape(await rejection(runtime.updateRun(id, 'add', { item: 'late' }))))
    expect(finished).toBeInstanceOf(RunFinishedError)
    expect(finished).toMatchObject({ status: 409, runId: id, runStatus: 'completed' })
  })

  it('throws UpdateTimeoutError with the id past timeoutSeconds, and TooManyUpdatesError for a full run', async () => {
    const { server, cart } = await start()
    const id = await cart(3600)
    const pending = await rejection(updateRun(id, 'add', { item: 'early' }, { id: 'e-1', timeoutSeconds: 0.2 }))
    expect(pending).toBeInstanceOf(UpdateTimeoutError)
    expect(pending).toMatchObject({ code: 'UPDATE_PENDING', runId: id, updateId: 'e-1' })
    expect(pending.message).toContain('ask again with id "e-1"')
    // No id given: the one it was sent with is the one to ask again with.
    const picked = await rejection(updateRun(id, 'add', { item: 'second' }, { timeoutSeconds: 0.2 }))
    expect(picked).toBeInstanceOf(UpdateTimeoutError)
    expect((await runtime.listUpdates(id)).map((u) => u.id)).toEqual(['e-1', picked.updateId])
    await fetch(`${server.url}/__tasks/runs/${id}/wake`, { method: 'POST', headers: AUTH })
    await until(async () => (await runtime.listUpdates(id)).every((u) => u.status === 'completed'))
    expect(await updateRun(id, 'add', undefined, { id: 'e-1' })).toEqual({ count: 1 })
    expect(await updateRun(id, 'add', undefined, { id: picked.updateId as string })).toEqual({ count: 2 })

    const full = await cart(3600)
    await Promise.all(
      Array.from({ length: MAX_PENDING_UPDATES }, (_, i) => rejection(updateRun(full, 'add', { item: `i${i}` }, { timeoutSeconds: 0.2 }))),
    )
    const refused = await rejection(updateRun(full, 'add', { item: 'more' }, { timeoutSeconds: 0.2 }))
    expect(refused).toBeInstanceOf(TooManyUpdatesError)
    expect(refused).toMatchObject({ status: 429, code: 'TOO_MANY_UPDATES', runId: full, retryAfterSeconds: 5 })
  })

  it('is an HttpError with its code for any other answer, such as a wrong secret', async () => {
    const { cart } = await start()
    const id = await cart()
    vi.stubEnv('SVC_TASK_SECRET', 'wrong-secret-0123456789abcdef0123456789')
    const refused = await rejection(updateRun(id, 'add', { item: 'x' }))
    expect(refused).toBeInstanceOf(HttpError)
    expect(refused).toMatchObject({ status: 401 })
  })

  it('calls the runtime active in this process, when there is one, without a request', async () => {
    const { cart } = await start()
    const id = await cart()
    setActiveTaskRuntime(runtime)
    // Nothing listens here: a request would be a NETWORK_ERROR.
    vi.stubEnv('SVC_TASK_URL', 'http://127.0.0.1:9')
    expect(await updateRun(id, 'add', { item: 'apple' }, { id: 'local' })).toEqual({ count: 1 })
    expect(await rejection(updateRun(id, 'add', { item: 'bomb' }))).toBeInstanceOf(UpdateFailedError)
  })

  it('throws a TypeError for a bad argument before any request leaves', async () => {
    setActiveTaskRuntime(null)
    // Nothing listens here: a request that left would be a NETWORK_ERROR.
    vi.stubEnv('SVC_TASK_URL', 'http://127.0.0.1:9')
    await expect(updateRun('', 'add')).rejects.toThrow(/runId must be a run's id/)
    await expect(updateRun('r', 'no spaces')).rejects.toThrow(TypeError)
    await expect(updateRun('r', 'add', 1, null as never)).rejects.toThrow(/options must be an object/)
    await expect(updateRun('r', 'add', 1, { id: '' })).rejects.toThrow(/an update id is 1 to/)
    for (const timeoutSeconds of [0, -1, 301, Number.NaN, '5' as never]) {
      await expect(updateRun('r', 'add', 1, { timeoutSeconds }), String(timeoutSeconds)).rejects.toThrow(/timeoutSeconds must be/)
    }
    await expect(updateRun('r', 'add', 1, { id: ' padded' })).rejects.toThrow(/an HTTP header can carry/)
    await expect(updateRun('r', 'add', { n: 1n })).rejects.toThrow(/cannot be stored as JSON/)
    await expect(updateRun('r', 'add', 1)).rejects.toMatchObject({ name: 'HttpError', code: 'NETWORK_ERROR' })
  })
})
