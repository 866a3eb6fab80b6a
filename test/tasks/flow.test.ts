import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import { SqliteRunStore } from '../../src/node.ts'
import { parseRunsQuery } from '../../src/runtime/admin/runs-query.ts'
import { createTaskRuntime, MemoryRunStore, type RunStore, tokenIdFor } from '../../src/runtime/tasks/index.ts'
import type { RunRecord, TaskContext } from '../../src/types.ts'
import { finished, recordingLogger, runtime, task, until } from './_helpers.ts'
import { type OverlapServer, overlapServer, reportAttempt } from './_overlap.ts'

const dir = mkdtempSync(join(tmpdir(), 'svc-flow-'))
let files = 0
const stores: SqliteRunStore[] = []
afterAll(() => rmSync(dir, { recursive: true, force: true }))

let counter: OverlapServer | undefined
afterEach(async () => {
  await counter?.close()
  counter = undefined
  for (const store of stores.splice(0)) await store.close()
})

function sqlite(path = join(dir, `runs-${++files}.db`)): SqliteRunStore {
  const store = new SqliteRunStore({ path })
  stores.push(store)
  return store
}

/** A promise the test settles by hand, to hold an attempt open. */
function gate(): { promise: Promise<void>; open(): void } {
  let open!: () => void
  const promise = new Promise<void>((resolve) => {
    open = resolve
  })
  return { promise, open }
}

const status = async (store: RunStore, id: string) => (await store.getRun(id))?.status

describe.each([
  ['MemoryRunStore', () => new MemoryRunStore() as RunStore],
  ['SqliteRunStore', () => sqlite() as RunStore],
])('flow control on %s', (_, createStore) => {
  it('50 runs with concurrency 2 never overlap by more than 2 and start in order of creation', async () => {
    const server = (counter = await overlapServer())
    const store = createStore()
    // Attempts enter their handler in the order the engine starts them;
    // two started together may reach the server in either order.
    const entered: string[] = []
    const rt = runtime(
      [
        task(
          'fetchy',
          (ctx: TaskContext<{ n: number }>) => {
            entered.push(ctx.runId)
            return reportAttempt(server.url, ctx.runId, '', 5)
          },
          { route: { concurrency: 2 } },
        ),
      ],
      { store },
    )
    const runs: RunRecord[] = []
    for (let n = 0; n < 50; n++) runs.push(await rt.trigger('fetchy', { n }))
    expect(runs.slice(2).every((run) => run.status === 'queued')).toBe(true)
    for (const run of runs) expect(await finished(rt.waitForRun(run.id))).toMatchObject({ status: 'completed' })
    expect(server.ends).toHaveLength(50)
    expect(server.maxOpen()).toBe(2)
    expect(entered).toEqual(runs.map((run) => run.id))
  })

  it('fair shares: with 2,000 runs of one tenant queued before 20 of another, concurrency 4 shared in turns, the 20 all start within the first 10% of the 2,000', async () => {
    const store = createStore()
    const entered: string[] = []
    const rt = runtime(
      [
        task(
          'tenant-job',
          async (ctx: TaskContext<{ tenant: string }>) => {
            entered.push(ctx.input.tenant)
            await new Promise((resolve) => setTimeout(resolve, 1))
          },
          { route: { concurrency: { limit: 4, key: 'input.tenant', perKey: 4 } } },
        ),
      ],
      { store },
    )
    const big = await rt.triggerMany(
      'tenant-job',
      Array.from({ length: 2000 }, () => ({ tenant: 'big' })),
    )
    const small = await rt.triggerMany(
      'tenant-job',
      Array.from({ length: 20 }, () => ({ tenant: 'small' })),
    )
    for (const item of [...big, ...small]) {
      if (!item.ok) throw new Error(item.error)
      expect(await finished(rt.waitForRun(item.id))).toMatchObject({ status: 'completed' })
    }
    expect(entered).toHaveLength(2020)
    const bigBeforeLastSmall = entered.slice(0, entered.lastIndexOf('small')).filter((tenant) => tenant === 'big').length
    expect(bigBeforeLastSmall).toBeLessThanOrEqual(200)
    expect((await rt.listTasks())[0].concurrency).toEqual({ limit: 4, key: 'input.tenant', perKey: 4 })
  }, 60_000)

  it('queued runs start by priority: enqueue priority, then route.priority, then creation order', async () => {
    const store = createStore()
    const hold = gate()
    const entered: string[] = []
    const rt = runtime(
      [
        task(
          'ranked',
          async (ctx: TaskContext<{ name: string }>) => {
            entered.push(ctx.input.name)
            if (ctx.input.name === 'first') await hold.promise
          },
          { route: { concurrency: 1, priority: 5 } },
        ),
      ],
      { store },
    )
    const first = await rt.trigger('ranked', { name: 'first' })
    await until(() => entered.length === 1)
    const low = await rt.trigger('ranked', { name: 'low' }, { priority: -1 })
    const plain = await rt.trigger('ranked', { name: 'plain' })
    const urgent = await rt.trigger('ranked', { name: 'urgent' }, { priority: 1000 })
    const zero = await rt.trigger('ranked', { name: 'zero' }, { priority: 0 })
    expect([low, plain, urgent, zero].map((run) => run.status)).toEqual(['queued', 'queued', 'queued', 'queued'])
    // The route's priority is recorded on a run started without its own; 0 is not recorded.
    expect([first.priority, low.priority, plain.priority, urgent.priority, zero.priority]).toEqual([5, -1, 5, 1000, undefined])
    hold.open()
    for (const run of [first, low, plain, urgent, zero]) await finished(rt.waitForRun(run.id))
    expect(entered).toEqual(['first', 'urgent', 'plain', 'zero', 'low'])
    // A replay keeps the priority of the run it repeats.
    expect((await rt.replay(urgent.id)).priority).toBe(1000)
  })

  it('a priority outside -1000..1000, or not a whole number, is refused before anything is recorded', async () => {
    const store = createStore()
    const rt = runtime([task('ranked', () => {}, { route: { concurrency: 1 } })], { store })
    await expect(rt.trigger('ranked', {}, { priority: 1001 })).rejects.toThrow(
      'trigger("ranked"): priority must be a whole number from -1000 to 1000; higher starts first (got 1001)',
    )
    await expect(rt.trigger('ranked', {}, { priority: 1.5 })).rejects.toThrow(RangeError)
    await expect(rt.trigger('ranked', {}, { priority: '3' as never })).rejects.toThrow(TypeError)
    expect(await store.listRuns()).toEqual([])
    expect(() => runtime([task('bad', () => {}, { route: { priority: 2000 } })], { store })).toThrow(
      'route.priority must be a whole number from -1000 to 1000',
    )
  })

  it('keyed concurrency runs one attempt per key value at once, and different keys side by side', async () => {
    const store = createStore()
    const gates = new Map<string, ReturnType<typeof gate>>()
    const rt = runtime(
      [
        task(
          'sync',
          async (ctx: TaskContext<{ user?: string; n: number }>) => {
            const g = gate()
            gates.set(ctx.runId, g)
            await g.promise
          },
          { route: { concurrency: { limit: 1, key: 'input.user' } } },
        ),
      ],
      { store },
    )
    const a1 = await rt.trigger('sync', { user: 'a', n: 1 })
    const a2 = await rt.trigger('sync', { user: 'a', n: 2 })
    const b1 = await rt.trigger('sync', { user: 'b', n: 1 })
    const none1 = await rt.trigger('sync', { n: 1 })
    const none2 = await rt.trigger('sync', { n: 2 })
    await until(() => gates.has(a1.id) && gates.has(b1.id) && gates.has(none1.id))
    expect(await status(store, a2.id)).toBe('queued')
    // A run without a value at the key shares one bucket with the others without one.
    expect(await status(store, none2.id)).toBe('queued')
    gates.get(a1.id)!.open()
    await until(() => gates.has(a2.id))
    expect(await status(store, a1.id)).toBe('completed')
    for (const id of [a2.id, b1.id, none1.id]) gates.get(id)!.open()
    await until(() => gates.has(none2.id))
    gates.get(none2.id)!.open()
    expect(await finished(rt.waitForRun(none2.id))).toMatchObject({ status: 'completed' })
  })

  it('a key value that is an object is one bucket whatever the order of its keys', async () => {
    const store = createStore()
    const gates = new Map<string, ReturnType<typeof gate>>()
    const rt = runtime(
      [
        task(
          'sync',
          async (ctx) => {
            const g = gate()
            gates.set(ctx.runId, g)
            await g.promise
          },
          { route: { concurrency: { limit: 1, key: 'input' } } },
        ),
      ],
      { store },
    )
    const first = await rt.trigger('sync', { a: 1, b: 2, nested: { x: [1, { p: 1, q: 2 }], y: 0 } })
    const second = await rt.trigger('sync', { nested: { y: 0, x: [1, { q: 2, p: 1 }] }, b: 2, a: 1 })
    const other = await rt.trigger('sync', { a: 1, b: 2, nested: { x: [{ p: 1, q: 2 }, 1], y: 0 } })
    await until(() => gates.has(first.id) && gates.has(other.id))
    expect(await status(store, second.id)).toBe('queued')
    gates.get(first.id)!.open()
    await until(() => gates.has(second.id))
    for (const id of [second.id, other.id]) gates.get(id)!.open()
    expect(await finished(rt.waitForRun(second.id))).toMatchObject({ status: 'completed' })
  })

  it('a suspended run holds no slot, and waits for one again when its token comes', async () => {
    const store = createStore()
    const gates = new Map<number, ReturnType<typeof gate>>()
    const rt = runtime(
      [
        task(
          'one',
          async (ctx: TaskContext<{ n: number }>) => {
            if (ctx.input.n === 1) return (await ctx.step.waitForToken('approval')) as unknown
            const g = gates.get(ctx.input.n) ?? gate()
            gates.set(ctx.input.n, g)
            await g.promise
            return ctx.input.n
          },
          { route: { concurrency: 1 } },
        ),
      ],
      { store },
    )
    const first = await rt.trigger('one', { n: 1 })
    const second = await rt.trigger('one', { n: 2 })
    await until(async () => (await status(store, first.id)) === 'suspended')
    // The suspended run let the second one start.
    await until(() => gates.has(2))
    expect(await status(store, second.id)).toBe('running')
    expect(await rt.completeToken(tokenIdFor(first.id, 'approval'), { ok: true })).toBe('completed')
    // Its wait is met, but the slot is taken: it queues.
    expect(await status(store, first.id)).toBe('queued')
    gates.get(2)!.open()
    expect(await finished(rt.waitForRun(first.id))).toMatchObject({ status: 'completed', result: { payload: { ok: true } } })
  })

  it('a queued run can be cancelled, and the next one takes the free slot', async () => {
    const store = createStore()
    const held = gate()
    const rt = runtime(
      [
        task(
          'one',
          async (ctx: TaskContext<{ n: number }>) => {
            if (ctx.input.n === 1) await held.promise
            return ctx.input.n
          },
          { route: { concurrency: 1 } },
        ),
      ],
      { store },
    )
    const first = await rt.trigger('one', { n: 1 })
    const second = await rt.trigger('one', { n: 2 })
    const third = await rt.trigger('one', { n: 3 })
    await until(async () => (await status(store, first.id)) === 'running')
    expect(await rt.cancel(second.id)).toMatchObject({ status: 'cancelled' })
    expect(await status(store, third.id)).toBe('queued')
    held.open()
    expect(await finished(rt.waitForRun(third.id))).toMatchObject({ status: 'completed', result: 3 })
    expect((await store.getRun(second.id))?.attempts).toEqual([])
  })

  it('debounce collapses 10 triggers into one run with the latest input, and each trigger gets its id', async () => {
    const store = createStore()
    const inputs: unknown[] = []
    const rt = runtime(
      [
        task(
          'digest',
          (ctx: TaskContext<{ user: string; n: number }>) => {
            inputs.push(ctx.input)
            return ctx.input.n
          },
          { route: { debounce: { seconds: 0.3, key: 'input.user' } } },
        ),
      ],
      { store },
    )
    const runs: RunRecord[] = []
    for (let n = 1; n <= 10; n++) runs.push(await rt.trigger('digest', { user: 'a', n }))
    const other = await rt.trigger('digest', { user: 'b', n: 1 })
    expect(new Set(runs.map((run) => run.id)).size).toBe(1)
    expect(other.id).not.toBe(runs[0].id)
    expect(runs[9]).toMatchObject({ status: 'scheduled', input: { user: 'a', n: 10 } })
    const done = await finished(rt.waitForRun(runs[0].id))
    expect(done).toMatchObject({ status: 'completed', result: 10 })
    // It starts `seconds` after the last trigger, not the first.
    expect(Date.parse(done.startedAt!)).toBeGreaterThanOrEqual(Date.parse(runs[9].runAt!))
    await finished(rt.waitForRun(other.id))
    // One run per key; the two keys' runs are due within a few milliseconds of each other, in either order.
    expect(inputs).toHaveLength(2)
    expect(inputs).toEqual(
      expect.arrayContaining([
        { user: 'a', n: 10 },
        { user: 'b', n: 1 },
      ]),
    )
    // A replay is one deliberate run: it starts at once, joining none.
    const replay = await rt.replay(done.id)
    expect(replay.status).toBe('running')
    expect(await finished(rt.waitForRun(replay.id))).toMatchObject({ status: 'completed', result: 10 })
  })

  it('rateLimit starts at most limit runs per period, the rest as the window frees places', async () => {
    const store = createStore()
    const rt = runtime([task('api', () => 1, { route: { rateLimit: { limit: 2, periodSeconds: 0.4 } } })], { store })
    const runs: RunRecord[] = []
    for (let n = 0; n < 5; n++) runs.push(await rt.trigger('api', { n }))
    expect(runs.map((run) => run.status)).toEqual(['queued', 'queued', 'queued', 'queued', 'queued'])
    expect((await rt.listTasks())[0]).toMatchObject({ rateLimit: { limit: 2, periodSeconds: 0.4, key: null } })
    const done = await Promise.all(runs.map((run) => finished(rt.waitForRun(run.id))))
    const starts = done.map((run) => Date.parse(run.startedAt!)).sort((a, b) => a - b)
    // A sliding window: any two starts apart by one are at least a period apart.
    for (let i = 2; i < starts.length; i++) expect(starts[i] - starts[i - 2]).toBeGreaterThanOrEqual(400)
    expect(done.map((run) => run.status)).toEqual(['completed', 'completed', 'completed', 'completed', 'completed'])
  })

  it('listTasks shows each task its limits and its queued count', async () => {
    const store = createStore()
    const held = gate()
    const rt = runtime(
      [
        task('limited', () => held.promise, { route: { concurrency: { limit: 1, key: 'input.user' }, debounce: { seconds: 60 } } }),
        task('free', () => 1),
      ],
      { store },
    )
    const first = await rt.trigger('limited', { user: 'a' })
    expect(first.status).toBe('scheduled')
    const tasks = await rt.listTasks()
    expect(tasks.find((t) => t.name === 'limited')).toMatchObject({
      concurrency: { limit: 1, key: 'input.user' },
      rateLimit: null,
      debounce: { seconds: 60, key: null },
      queued: 0,
    })
    expect(tasks.find((t) => t.name === 'free')).toMatchObject({ concurrency: null, rateLimit: null, debounce: null, queued: 0 })
    await rt.cancel(first.id)
    held.open()
  })
})

describe('flow control: queued counts and restarts', () => {
  it('the runs API takes status=queued', () => {
    expect(parseRunsQuery(new URLSearchParams('status=queued&task=one'))).toMatchObject({ status: ['queued'], taskName: 'one' })
  })

  it('listTasks counts the queued runs', async () => {
    const held = gate()
    const rt = runtime([task('one', () => held.promise, { route: { concurrency: 1 } })])
    const runs = [await rt.trigger('one'), await rt.trigger('one'), await rt.trigger('one')]
    expect((await rt.listTasks())[0]).toMatchObject({ concurrency: { limit: 1, key: null }, queued: 2 })
    expect(await rt.listRuns({ status: 'queued' })).toHaveLength(2)
    held.open()
    for (const run of runs) await finished(rt.waitForRun(run.id))
    expect((await rt.listTasks())[0]).toMatchObject({ queued: 0 })
  })

  it('queued runs on SQLite survive a restart and start after it, still one at a time', async () => {
    const path = join(dir, `restart-${++files}.db`)
    const server = (counter = await overlapServer())
    const held = gate()
    const route = (onRun: (ctx: TaskContext) => Promise<unknown>) => [task('one', onRun, { route: { concurrency: 1 } })]
    const before = createTaskRuntime({ routes: route(() => held.promise), store: sqlite(path), logger: recordingLogger(), env: {} })
    const runs = [await before.trigger('one'), await before.trigger('one'), await before.trigger('one')]
    await until(async () => (await status(before.store, runs[0].id)) === 'running')
    expect(await status(before.store, runs[2].id)).toBe('queued')
    await before.close()
    await stores.pop()?.close()
    held.open()

    const store = sqlite(path)
    expect(await status(store, runs[2].id)).toBe('queued')
    const entered: string[] = []
    const after = runtime(
      route((ctx) => {
        entered.push(ctx.runId)
        return reportAttempt(server.url, ctx.runId, '', 5)
      }),
      { store },
    )
    await after.recover()
    for (const run of runs) expect(await finished(after.waitForRun(run.id))).toMatchObject({ status: 'completed' })
    expect(entered).toEqual(runs.map((run) => run.id))
    expect(server.maxOpen()).toBe(1)
  })
})

describe('starting queued runs', () => {
  it('triggers while a start is under way wait for it and make one more start together, not one each; every run still starts', async () => {
    let reads = 0
    let reading = 0
    let mostAtOnce = 0
    const store = new (class extends MemoryRunStore {
      override async startQueued(...args: Parameters<MemoryRunStore['startQueued']>) {
        reads++
        mostAtOnce = Math.max(mostAtOnce, ++reading)
        // A start that takes a while, as one reading a deep queue does.
        await new Promise((resolve) => setTimeout(resolve, 20))
        try {
          return await super.startQueued(...args)
        } finally {
          reading--
        }
      }
    })()
    const held = gate()
    const rt = runtime([task('one.at.a.time', () => held.promise, { route: { concurrency: 1 } })], { store })
    const runs = await Promise.all(Array.from({ length: 50 }, (_, n) => rt.trigger('one.at.a.time', { n })))
    await until(() => reading === 0)
    // 50 triggers: the first start, and one more for all those made while it read.
    expect(reads).toBeLessThanOrEqual(3)
    expect(mostAtOnce).toBe(1)
    held.open()
    for (const run of runs) expect(await finished(rt.waitForRun(run.id))).toMatchObject({ status: 'completed' })
  })
})

describe('flow control config at runtime', () => {
  it.each([
    [{ concurrency: 0 }, 'route.concurrency must be a whole number of runs, 1 or more'],
    [{ concurrency: { limit: 2, key: 'user' } }, "route.concurrency.key must be a dotted path into the task's input"],
    [
      { concurrency: { limit: 2, key: 'input.user', perKey: 0 } },
      'route.concurrency.perKey must be a whole number of runs from 1 to limit (2)',
    ],
    [{ rateLimit: { limit: 1 } }, 'route.rateLimit.periodSeconds must be a number of seconds above 0'],
    [{ rateLimit: { limit: 1, periodSeconds: 1, per: 2 } }, 'route.rateLimit has no field "per"'],
    [{ debounce: { seconds: -1 } }, 'route.debounce.seconds must be a number of seconds above 0'],
    [{ priorityAging: 0 }, 'route.priorityAging must be the priority points a queued run gains per second it waits, above 0'],
    [{ priorityAging: 'strict' }, 'or false for strict priority order (got "strict")'],
  ])('defineTasks rejects %j', (route, message) => {
    expect(() => createTaskRuntime({ routes: [task('bad', () => 1, { route: route as never })], env: {} })).toThrow(message)
  })
})
