import { afterEach, describe, expect, it } from 'vitest'
import { SqliteRunStore } from '../../src/node.ts'
import { MemoryRunStore, type RunStore } from '../../src/runtime/tasks/index.ts'
import type { RunRecord } from '../../src/types.ts'
import { runtime, sleep, task } from './_helpers.ts'

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

    it('values JSON can hold, a Date among them, still complete', async () => {
      const rt = runtime([task('dated', async (ctx) => ({ at: await ctx.step.run('at', () => new Date(0)) }))], { store: makeStore() })
      const done = await finished(rt.waitForRun((await rt.trigger('dated')).id))
      expect(done.status).toBe('completed')
      expect(JSON.parse(JSON.stringify(done.result))).toEqual({ at: '1970-01-01T00:00:00.000Z' })
    })
  })
}
