import { afterEach, describe, expect, it } from 'vitest'
import { SqliteRunStore } from '../../src/node.ts'
import { createSvcHandler } from '../../src/index.ts'
import { MemoryRunStore, tokenIdFor, type RunStore } from '../../src/runtime/tasks/index.ts'
import type { RunRecord } from '../../src/types.ts'
import { runtime, sleep, task, until } from './_helpers.ts'

const sqlite: SqliteRunStore[] = []
afterEach(() => {
  for (const store of sqlite.splice(0)) store.close()
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

/** The run once it finished, or a clear failure after a generous bound instead of a hang. */
async function finished(wait: Promise<RunRecord>): Promise<RunRecord> {
  const timeout = sleep(5000).then(() => {
    throw new Error('the run did not finish within 5 s')
  })
  return Promise.race([wait, timeout])
}

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
      const rt = runtime([task('graph', cycle, { route: { retries: 1 } })], { store: makeStore() })
      const done = await finished(rt.waitForRun((await rt.trigger('graph')).id))
      expect(done.status).toBe('failed')
      expect(done.attempts.map((a) => a.index)).toEqual([1, 2])
      for (const attempt of done.attempts) expect(attempt.error).toMatch(/^Task "graph" returned a value that cannot be stored as JSON: .*circular/i)
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
      expect(done.steps).toEqual({})
    })

    it('a result nested deeper than 256 levels fails the attempt, and GET /__tasks/<id> still answers the run', async () => {
      const rt = runtime([task('deep', (ctx) => nested(ctx.input as number))], { store: makeStore() })
      const handler = createSvcHandler({ routes: [], runtime: rt, env: { SVC_TASK_SECRET: 's' }, logger: rt.logger })
      for (const depth of [257, 5000]) {
        const done = await finished(rt.waitForRun((await rt.trigger('deep', depth)).id))
        expect(done.status).toBe('failed')
        expect(done.attempts[0].error).toBe(
          'Task "deep" returned a value that cannot be stored as JSON: it nests arrays and objects deeper than 256 levels',
        )
        const res = await handler.fetch(new Request(`http://svc/__tasks/${done.id}`, { headers: { authorization: 'Bearer s' } }))
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
      expect(done.steps).toEqual({})
    })

    it('an in-process payload JSON cannot hold is a TypeError and starts no run', async () => {
      const store = makeStore()
      const rt = runtime([task('echo', (ctx) => ctx.input)], { store })
      await expect(rt.trigger('echo', { id: 1n })).rejects.toThrow(
        /^trigger\("echo"\): the payload cannot be stored as JSON: .*BigInt/,
      )
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
