import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { SqliteRunStore } from '../../src/node.ts'
import { createTaskRuntime, MemoryRunStore } from '../../src/runtime/tasks/index.ts'
import { Retention, resolveRetention } from '../../src/runtime/tasks/store/retention.ts'
import { finished, runtime, sleep, task, until } from './_helpers.ts'
import { retentionSoak } from './_retention-soak.ts'

const dir = mkdtempSync(join(tmpdir(), 'svc-retention-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
let files = 0
const sqlite = () => new SqliteRunStore({ path: join(dir, `runs-${++files}.db`) })

describe('retention', () => {
  it("deletes a task's finished runs once past its route.retention, keeps live runs and the runs of tasks that keep theirs", async () => {
    const store = new MemoryRunStore()
    const rt = runtime(
      [
        task('brief', (ctx) => (ctx.input.wait ? ctx.step.sleep('wait', 60) : 'done'), { route: { retention: 1 } }),
        task('kept', () => 'done'),
      ],
      { store },
    )
    await rt.recover()
    const brief = await finished(rt.waitForRun((await rt.trigger('brief', {})).id))
    const sleeping = await rt.trigger('brief', { wait: true })
    const kept = await finished(rt.waitForRun((await rt.trigger('kept', {})).id))
    await until(async () => (await store.getRun(brief.id)) === undefined, 5000)
    expect(await store.getRun(kept.id)).toBeDefined()
    expect((await store.getRun(sleeping.id))?.status).toBe('suspended')
  })

  it('keeps finished runs 7 days on a durable store by default, and for the retention option when set', async () => {
    const tasks = [task('a', () => 1), task('b', () => 1, { route: { retention: 60 } })]
    const durable = sqlite()
    try {
      const defined = createTaskRuntime({ routes: tasks, store: durable, env: {} })
      expect(defined.tasks.get('a')?.retentionMs).toBeUndefined()
      await defined.close()
      // A round every quarter of the shortest retention, within 1 s and 10 min.
      const every = (defaultMs: number | undefined, routes = tasks) =>
        new Retention({ store: durable, tasks: createTaskRuntime({ routes, env: {} }).tasks, logger: console, defaultMs }).everyMs
      expect(every(7 * 24 * 3600_000)).toBe(15_000)
      expect(every(7 * 24 * 3600_000, [task('a', () => 1)])).toBe(600_000)
      expect(every(undefined, [task('a', () => 1)])).toBeUndefined()
      expect(every(undefined, [task('b', () => 1, { route: { retention: 1 } })])).toBe(1000)
      expect(() => createTaskRuntime({ routes: tasks, store: durable, env: {}, retention: 0 })).toThrow(
        'createTaskRuntime(): retention must be a positive number of seconds that finished runs are kept, such as 604800 (7 days) (got 0)',
      )
    } finally {
      await durable.close()
    }
  })

  it('SVC_RETENTION sets the default in seconds, or off; a bad value is refused naming the variable', () => {
    const routes = [task('a', () => 1)]
    expect(resolveRetention(undefined, { SVC_RETENTION: '90' }, false)).toBe(90_000)
    expect(resolveRetention(undefined, { SVC_RETENTION: 'off' }, true)).toBeUndefined()
    expect(resolveRetention(undefined, {}, true)).toBe(604_800_000)
    expect(resolveRetention(undefined, {}, false)).toBeUndefined()
    expect(resolveRetention(30, { SVC_RETENTION: 'off' }, true)).toBe(30_000)
    expect(() => createTaskRuntime({ routes, env: { SVC_RETENTION: '7d' } })).toThrow(
      `createTaskRuntime(): SVC_RETENTION must be a positive number of seconds that finished runs are kept, such as 604800 (7 days) (got "7d"), or 'off' to keep them within maxRuns`,
    )
  })

  it('the runtime default applies to tasks without route.retention and to tasks the app no longer has', async () => {
    const store = sqlite()
    try {
      const before = runtime([task('gone', () => 1), task('stays', () => 1)], { store })
      const gone = await finished(before.waitForRun((await before.trigger('gone', {})).id))
      const stays = await finished(before.waitForRun((await before.trigger('stays', {})).id))
      await before.close()
      const after = runtime([task('stays', () => 1, { route: { retention: 3600 } })], { store, retention: 1 })
      await after.recover()
      await until(async () => (await store.getRun(gone.id)) === undefined, 5000)
      expect(await store.getRun(stays.id)).toBeDefined()
    } finally {
      await store.close()
    }
  })

  it('retention: false keeps finished runs on a durable store (within maxRuns); the default deletes them', async () => {
    const store = sqlite()
    try {
      const longAgo = new Date(Date.now() - 30 * 24 * 3600_000).toISOString()
      const old = { taskName: 'a', status: 'completed', trigger: 'manual', input: {}, ok: true, attempts: [], steps: {} } as const
      const kept = await store.createRun({ ...old, id: 'kept', createdAt: longAgo, finishedAt: longAgo, attempts: [], steps: {} })
      const keeping = runtime([task('a', () => 1)], { store, retention: false })
      await keeping.recover()
      await keeping.sweep!({ untilMs: Date.now() })
      await sleep(50)
      expect(await store.getRun(kept.id)).toBeDefined()
      await keeping.close()
      const pruning = runtime([task('a', () => 1)], { store })
      await pruning.recover()
      await until(async () => (await store.getRun(kept.id)) === undefined, 5000)
    } finally {
      await store.close()
    }
  })

  it('a function platform sweep prunes when a round is due', async () => {
    const store = new MemoryRunStore()
    const rt = runtime([task('brief', () => 1, { route: { retention: 1 } })], { store })
    const run = await finished(rt.waitForRun((await rt.trigger('brief', {})).id))
    // No recover(): the runtime of a function invocation arms no timers.
    await until(() => Date.now() - Date.parse(run.finishedAt!) > 1100, 5000)
    await rt.sweep!({ untilMs: Date.now() })
    expect(await store.getRun(run.id)).toBeUndefined()
  })

  it('a failing prune is logged and tried again in the next round', async () => {
    const store = new MemoryRunStore()
    let failures = 1
    const prune = store.pruneFinished.bind(store)
    store.pruneFinished = (...args) => (failures-- > 0 ? Promise.reject(new Error('disk on fire')) : prune(...args))
    const rt = runtime([task('brief', () => 1, { route: { retention: 1 } })], { store })
    const run = await finished(rt.waitForRun((await rt.trigger('brief', {})).id))
    await until(() => Date.now() - Date.parse(run.finishedAt!) > 1100, 5000)
    await rt.recover()
    await until(async () => (await store.getRun(run.id)) === undefined, 5000)
    expect(
      rt.logger.lines
        .filter((line) => line.level === 'warn')
        .map((line) => line.text)
        .join('\n'),
    ).toContain('deleting finished runs past their retention failed (tried again in 1000 ms): disk on fire')
  })

  it('soak: a SQLite store stays bounded under continuous runs with a 1 s retention', async () => {
    const store = sqlite()
    try {
      const figures = await retentionSoak(store)
      // Never more than what was triggered in the last 5 s (of a 10 s soak): older runs are pruned as it goes.
      expect(figures.excess).toBe(0)
      expect(figures.last).toBeLessThan(figures.triggered / 2)
    } finally {
      await store.close()
    }
  }, 30_000)
})
