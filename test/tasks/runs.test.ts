import { afterEach, describe, expect, it, vi } from 'vitest'
import { createSvcHandler } from '../../src/index.ts'
import { SqliteRunStore } from '../../src/node.ts'
import { TaskNotFoundError, ValidationError } from '../../src/runtime/errors.ts'
import { defineSchema } from '../../src/runtime/schema.ts'
import { MemoryRunStore, tokenIdFor, type RunStore } from '../../src/runtime/tasks/index.ts'
import * as v from 'valibot'
import { finishedAfter, finished, runtime, sleep, task, until, untimedSteps } from './_helpers.ts'

describe('run states and transitions', () => {
  it('a valid trigger resolves at once with status running and does not wait for the handler', async () => {
    let release!: () => void
    const gate = new Promise<void>((resolve) => (release = resolve))
    const rt = runtime([task('slow', async () => gate.then(() => 'done'))])
    const run = await rt.trigger('slow')
    expect(run.status).toBe('running')
    expect(run.ok).toBe(true)
    expect(run.attempts).toEqual([])
    expect((await rt.getRun(run.id))?.status).toBe('running')
    release()
    const done = await rt.waitForRun(run.id)
    expect(done.status).toBe('completed')
    expect(done.result).toBe('done')
  })

  it('an invalid payload creates no run, invokes no handler and consumes no attempt', async () => {
    let calls = 0
    const input = v.object({ to: v.string() })
    const rt = runtime([task('mail', () => calls++, { input })])
    const error = await rt.trigger('mail', { to: 42 }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(ValidationError)
    expect((error as ValidationError).code).toBe('VALIDATION_FAILED')
    expect((error as ValidationError).details[0]).toMatchObject({ target: 'input', path: ['to'] })
    expect(await rt.listRuns()).toEqual([])
    expect(calls).toBe(0)
  })

  it('a defineSchema({ body }) input validates the payload as body', async () => {
    const rt = runtime([task('mail', (ctx) => ctx.input, { input: defineSchema({ body: v.object({ to: v.string() }) }) })])
    const bad = await rt.trigger('mail', {}).catch((e: unknown) => e)
    expect((bad as ValidationError).details[0].target).toBe('body')
    const run = await rt.trigger('mail', { to: 'a@b.c' })
    expect((await rt.waitForRun(run.id)).result).toEqual({ to: 'a@b.c' })
  })

  it('an unknown task name rejects with TaskNotFoundError listing the available tasks', async () => {
    const rt = runtime([task('report', () => 1), task('jobs.notify', () => 2)])
    const error = await rt.trigger('nope').catch((e: unknown) => e)
    expect(error).toBeInstanceOf(TaskNotFoundError)
    expect((error as Error).message).toContain('report, jobs.notify')
  })

  it('a handler that returns completes the run with ok true and the result', async () => {
    const rt = runtime([task('sum', (ctx) => ctx.input.a + ctx.input.b)])
    const run = await rt.trigger('sum', { a: 2, b: 3 })
    const done = await rt.waitForRun(run.id)
    expect(done).toMatchObject({ status: 'completed', ok: true, result: 5, taskName: 'sum', steps: {} })
    expect(done.attempts).toHaveLength(1)
    expect(done.attempts[0].index).toBe(1)
    expect(done.attempts[0].error).toBeUndefined()
    expect(Number.isNaN(Date.parse(done.attempts[0].startedAt))).toBe(false)
    expect(done.attempts[0].durationMs).toBeGreaterThanOrEqual(0)
    expect(done.finishedAt).toBeTypeOf('string')
  })

  it('a throwing attempt with retries left runs again with ctx.attempt incremented', async () => {
    vi.useFakeTimers()
    const seen: number[] = []
    const rt = runtime([
      task(
        'flaky',
        (ctx) => {
          seen.push(ctx.attempt)
          if (ctx.attempt < 2) throw new Error('boom')
          return 'ok'
        },
        { route: { retries: 2 } },
      ),
    ])
    const done = await finishedAfter(rt, (await rt.trigger('flaky')).id, 100) // the backoff before attempt 2
    expect(seen).toEqual([1, 2])
    expect(done.status).toBe('completed')
    expect(done.attempts.map((a) => a.error)).toEqual(['boom', undefined])
    expect(rt.logger.text('warn')).toContain('attempt 1 of 3 failed')
  })

  it('waitForRun asked while an attempt runs answers once the run ends, after a failed attempt and a suspension', async () => {
    let release!: () => void
    const gate = new Promise<void>((resolve) => (release = resolve))
    const rt = runtime([
      task(
        'bumpy',
        async (ctx) => {
          await gate
          if (ctx.attempt < 2) throw new Error('boom')
          await ctx.step.sleep('pause', 0.01)
          return ctx.attempt
        },
        { route: { retries: 1 } },
      ),
    ])
    const { id } = await rt.trigger('bumpy')
    const waiting = rt.waitForRun(id)
    const alsoWaiting = rt.waitForRun(id)
    release()
    const done = await finished(waiting)
    expect(done).toMatchObject({ id, status: 'completed', result: 2 })
    expect(untimedSteps(done.steps)).toEqual({ pause: { status: 'completed', kind: 'sleep' } })
    expect(await finished(alsoWaiting)).toBe(done)
  })

  it('with no retries left the run fails with ok false and every attempt recorded, message only', async () => {
    vi.useFakeTimers()
    const rt = runtime([
      task(
        'broken',
        (ctx) => {
          throw new Error(`fail ${ctx.attempt}`)
        },
        { route: { retries: 1 } },
      ),
    ])
    const done = await finishedAfter(rt, (await rt.trigger('broken')).id, 100) // the backoff before attempt 2
    expect(done.status).toBe('failed')
    expect(done.ok).toBe(false)
    expect(done.result).toBeUndefined()
    expect(done.attempts.map((a) => [a.index, a.error])).toEqual([
      [1, 'fail 1'],
      [2, 'fail 2'],
    ])
    expect(JSON.stringify(done)).not.toContain('    at ')
    expect(rt.logger.text('error')).toMatch(/task "broken" failed after 2 attempts .*fail 2/)
  })

  it('a synchronous throw and a thrown non-Error both become message strings', async () => {
    const rt = runtime([
      task('str', () => {
        throw 'plain string'
      }),
      task('obj', async () => {
        throw { reason: 'nope' }
      }),
    ])
    const a = await rt.waitForRun((await rt.trigger('str')).id)
    const b = await rt.waitForRun((await rt.trigger('obj')).id)
    expect(a.attempts[0].error).toBe('plain string')
    expect(b.attempts[0].error).toBe('{"reason":"nope"}')
  })

  it('an attempt that exceeds its timeout fails with a clear message and aborts ctx.signal', async () => {
    let signal: AbortSignal | undefined
    const rt = runtime([
      task(
        'hang',
        async (ctx) => {
          signal = ctx.signal
          await sleep(500)
          return 'late'
        },
        { route: { timeout: 30 } },
      ),
    ])
    const done = await rt.waitForRun((await rt.trigger('hang')).id)
    expect(done.status).toBe('failed')
    expect(done.attempts[0].error).toBe('Attempt 1 timed out after 30 ms')
    expect(signal?.aborted).toBe(true)
    expect((signal?.reason as Error | undefined)?.name).toBe('TimeoutError')
  })

  it('a timed-out attempt retries when retries remain', async () => {
    vi.useFakeTimers()
    const rt = runtime([
      task(
        'slowfirst',
        async (ctx) => {
          if (ctx.attempt === 1) await sleep(200)
          return ctx.attempt
        },
        { route: { timeout: 25, retries: 1 } },
      ),
    ])
    const done = await finishedAfter(rt, (await rt.trigger('slowfirst')).id, 25 + 100) // attempt 1 times out, then the backoff
    expect(done.result).toBe(2)
    expect(done.attempts[0].error).toBe('Attempt 1 timed out after 25 ms')
  })

  it('a handler can stop its work when ctx.signal aborts', async () => {
    let stoppedEarly = false
    const rt = runtime([
      task(
        'cooperative',
        (ctx) =>
          new Promise((_, reject) => {
            ctx.signal.addEventListener('abort', () => {
              stoppedEarly = true
              reject(ctx.signal.reason)
            })
          }),
        { route: { timeout: 20 } },
      ),
    ])
    await rt.waitForRun((await rt.trigger('cooperative')).id)
    expect(stoppedEarly).toBe(true)
  })
})

const SECRET = 'runs-secret-0123456789abcdef01234567'
const sqlite: SqliteRunStore[] = []
afterEach(async () => {
  for (const store of sqlite.splice(0)) await store.close()
})

const stores: [string, () => RunStore][] = [
  ['MemoryRunStore', () => new MemoryRunStore()],
  [
    'SqliteRunStore',
    () => {
      const store = new SqliteRunStore({ path: ':memory:' })
      sqlite.push(store)
      return store
    },
  ],
]

/** An array nested `depth` levels deep, built without recursion. */
function nested(depth: number): unknown[] {
  let value: unknown[] = []
  for (let i = 1; i < depth; i++) value = [value]
  return value
}

const cycle = () => {
  const node: Record<string, unknown> = { name: 'a' }
  node.self = node
  return node
}

// Results and step outputs are records: the admin surface and `svc tasks
// run --json` send them as JSON and a durable store keeps them as JSON. A
// value JSON cannot hold must fail the attempt with a message that says so,
// the same way on every store, instead of leaving the run unfinished.
for (const [name, makeStore] of stores) {
  describe(`values that cannot be stored as JSON (${name})`, () => {
    it('a BigInt result fails the attempt with a clear message and the run ends', async () => {
      const rt = runtime([task('count', () => ({ total: 10n }))], { store: makeStore() })
      const done = await finished(rt.waitForRun((await rt.trigger('count')).id))
      expect(done.status).toBe('failed')
      expect(done.ok).toBe(false)
      expect(done.attempts).toHaveLength(1)
      expect(done.attempts[0].error).toMatch(/^Task "count" returned a value that cannot be stored as JSON: .*BigInt/)
      expect(rt.logger.text('error')).toContain('task "count" failed')
    })

    it('a cyclic result fails every attempt, retries included', async () => {
      vi.useFakeTimers()
      const rt = runtime([task('graph', cycle, { route: { retries: 1 } })], { store: makeStore() })
      const done = await finishedAfter(rt, (await rt.trigger('graph')).id, 100) // the backoff before attempt 2
      expect(done.status).toBe('failed')
      expect(done.attempts.map((a) => a.index)).toEqual([1, 2])
      for (const attempt of done.attempts)
        expect(attempt.error).toMatch(/^Task "graph" returned a value that cannot be stored as JSON: .*circular/i)
    })

    it('a step output JSON cannot hold is an error from step.run that names the step', async () => {
      let caught: unknown
      const rt = runtime(
        [
          task('stepper', async (ctx) => {
            try {
              await ctx.step.run('load', () => ({ id: 1n }))
            } catch (error) {
              caught = error
              throw error
            }
          }),
        ],
        { store: makeStore() },
      )
      const done = await finished(rt.waitForRun((await rt.trigger('stepper')).id))
      expect(caught).toBeInstanceOf(TypeError)
      expect(done.attempts[0].error).toMatch(/^ctx\.step\.run\("load"\) returned a value that cannot be stored as JSON: .*BigInt/)
      expect(untimedSteps(done.steps)).toEqual({})
    })

    it('a result nested deeper than 256 levels fails the attempt, and GET /__tasks/<id> still answers the run', async () => {
      const rt = runtime([task('deep', (ctx) => nested(ctx.input as number))], { store: makeStore() })
      const handler = createSvcHandler({ routes: [], runtime: rt, env: { SVC_TASK_SECRET: SECRET }, logger: rt.logger })
      for (const depth of [257, 5000]) {
        const done = await finished(rt.waitForRun((await rt.trigger('deep', depth)).id))
        expect(done.status).toBe('failed')
        expect(done.attempts[0].error).toBe(
          'Task "deep" returned a value that cannot be stored as JSON: it nests arrays and objects deeper than 256 levels',
        )
        const res = await handler.fetch(new Request(`http://svc/__tasks/${done.id}`, { headers: { authorization: `Bearer ${SECRET}` } }))
        expect(res.status).toBe(200)
        expect(await res.json()).toMatchObject({ id: done.id, status: 'failed' })
      }
      const deepest = await finished(rt.waitForRun((await rt.trigger('deep', 256)).id))
      expect(deepest.status).toBe('completed')
    })

    it('a step output nested deeper than 256 levels is an error from step.run that names the step', async () => {
      const rt = runtime([task('stepper', (ctx) => ctx.step.run('load', () => nested(300)))], { store: makeStore() })
      const done = await finished(rt.waitForRun((await rt.trigger('stepper')).id))
      expect(done.attempts[0].error).toBe(
        'ctx.step.run("load") returned a value that cannot be stored as JSON: it nests arrays and objects deeper than 256 levels',
      )
      expect(untimedSteps(done.steps)).toEqual({})
    })

    it('an in-process payload JSON cannot hold is a TypeError and starts no run', async () => {
      const store = makeStore()
      const rt = runtime([task('echo', (ctx) => ctx.input)], { store })
      await expect(rt.trigger('echo', { id: 1n })).rejects.toThrow(/^trigger\("echo"\): the payload cannot be stored as JSON: .*BigInt/)
      await expect(rt.trigger('echo', nested(5000))).rejects.toThrow(
        'trigger("echo"): the payload cannot be stored as JSON: it nests arrays and objects deeper than 256 levels',
      )
      await expect(rt.trigger('echo', cycle())).rejects.toBeInstanceOf(TypeError)
      expect(await store.listRuns()).toEqual([])
    })

    it('a token payload JSON cannot hold is a TypeError and leaves the token waiting', async () => {
      const rt = runtime([task('approve', (ctx) => ctx.step.waitForToken('ok'))], { store: makeStore() })
      const run = await rt.trigger('approve')
      await until(async () => (await rt.getRun(run.id))?.status === 'suspended')
      const tokenId = tokenIdFor(run.id, 'ok')
      await expect(rt.completeToken(tokenId, nested(5000))).rejects.toThrow(
        `completeToken("${tokenId}"): the payload cannot be stored as JSON: it nests arrays and objects deeper than 256 levels`,
      )
      await expect(rt.completeToken(tokenId, { n: 1n })).rejects.toBeInstanceOf(TypeError)
      expect((await rt.store.getToken(tokenId))?.status).toBe('waiting')
      expect(await rt.completeToken(tokenId, { fine: true })).toBe('completed')
      expect((await finished(rt.waitForRun(run.id))).result).toEqual({ payload: { fine: true } })
    })

    it('values JSON can hold, a Date among them, still complete', async () => {
      const rt = runtime([task('dated', async (ctx) => ({ at: await ctx.step.run('at', () => new Date(0)) }))], { store: makeStore() })
      const done = await finished(rt.waitForRun((await rt.trigger('dated')).id))
      expect(done.status).toBe('completed')
      expect(JSON.parse(JSON.stringify(done.result))).toEqual({ at: '1970-01-01T00:00:00.000Z' })
    })
  })
}
