import { spawn } from 'node:child_process'
import postgres from 'postgres'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { PostgresRunStore } from '../../src/postgres.ts'
import { StoreFullError } from '../../src/runtime/errors.ts'
import { EVENT_PRUNE_BATCH, EVENT_RETENTION_MS } from '../../src/runtime/tasks/store/store.ts'
import { migrate, SCHEMA_VERSION } from '../../src/postgres/migrations.ts'
import { eventStoreContract } from '../tasks/event-store-contract.ts'
import { sharedWorkContract } from '../tasks/shared-work-contract.ts'
import { makeRun, runStoreContract } from '../tasks/store-contract.ts'
import { createDatabase } from './_pg.ts'

let url: string
let admin: postgres.Sql
beforeAll(async () => {
  url = await createDatabase('store')
  admin = postgres(url, { onnotice: () => {} })
})
afterAll(() => admin.end())

let schemas = 0
const freshSchema = () => `s${++schemas}`
const EPOCH = new Date(0).toISOString()

const open: PostgresRunStore[] = []
function store(options: Partial<ConstructorParameters<typeof PostgresRunStore>[0]> = {}): PostgresRunStore {
  const s = new PostgresRunStore({ url, schema: freshSchema(), ...options })
  open.push(s)
  return s
}
afterEach(async () => {
  await Promise.all(open.splice(0).map((s) => s.close()))
})

runStoreContract('PostgresRunStore', (options) => store(options))
eventStoreContract('PostgresRunStore', () => store(), {
  // Tens of thousands of events in one statement, rows as putEvent writes them.
  async putEvents(s, events) {
    const { schema } = s as PostgresRunStore
    await (s as PostgresRunStore).ready()
    await admin`
      INSERT INTO ${admin(schema)}.events (id, name, time, data)
      SELECT id, name, time::timestamptz, data FROM jsonb_to_recordset(${admin.json(events as never)}::jsonb) AS e(id text, name text, time text, data jsonb)`
  },
})

describe('PostgresRunStore durability', () => {
  it('keeps runs, steps, attempts, timers and tokens after closing and opening the store again', async () => {
    const schema = freshSchema()
    const first = store({ schema })
    const run = makeRun({ status: 'suspended', idempotencyKey: 'once' })
    await first.createRun(run)
    await first.appendAttempt(run.id, { index: 1, startedAt: run.createdAt, durationMs: 2, error: 'boom' })
    await first.saveStep(run.id, 'a', { status: 'completed', output: { n: 1 } })
    await first.updateRun(run.id, { suspended: { stepKey: 'w', waitpoint: { type: 'token', tokenId: `${run.id}:w` } } })
    const timer = { id: 't', runId: run.id, kind: 'sleep' as const, stepKey: 's', dueAt: '2030-01-01T00:00:00.000Z' }
    await first.saveTimer(timer)
    await first.putToken({ id: `${run.id}:w`, runId: run.id, stepKey: 'w', status: 'waiting', createdAt: run.createdAt })
    await first.close()

    const second = store({ schema })
    expect(await second.getRun(run.id)).toMatchObject({
      status: 'suspended',
      attempts: [{ index: 1, error: 'boom' }],
      steps: { a: { status: 'completed', output: { n: 1 } } },
      suspended: { stepKey: 'w' },
    })
    expect(await second.listTimers()).toEqual([timer])
    expect((await second.getToken(`${run.id}:w`))?.status).toBe('waiting')
    // The idempotency key is still held by the run.
    expect((await second.createRun(makeRun({ idempotencyKey: 'once' }))).id).toBe(run.id)
  })

  it('stores records as jsonb and keeps step outputs, payloads and results that are any JSON value', async () => {
    const s = store()
    const run = makeRun({ input: ['a', 1, null, { deep: [[{ x: 'é' }]] }] })
    await s.createRun(run)
    await s.saveStep(run.id, 'str', { status: 'completed', output: 'plain string' })
    await s.saveStep(run.id, 'num', { status: 'completed', output: 0 })
    await s.updateRun(run.id, { status: 'completed', result: 'done' })
    const read = (await s.getRun(run.id))!
    expect(read.input).toEqual(run.input)
    expect(read.steps).toEqual({ str: { status: 'completed', output: 'plain string' }, num: { status: 'completed', output: 0 } })
    expect(read.result).toBe('done')
    await s.putToken({ id: 'tok', runId: run.id, stepKey: 'w', status: 'waiting', createdAt: run.createdAt })
    expect((await s.settleToken('tok', 'completed', 'yes'))?.token.payload).toBe('yes')
    const [{ type }] = await admin.unsafe(`SELECT pg_typeof(record)::text AS type FROM ${s.schema}.runs LIMIT 1`)
    expect(type).toBe('jsonb')
  })

  it('a string holding the NUL character, which jsonb cannot hold, is refused with an error that says so', async () => {
    const s = store()
    const refused = makeRun({ input: { name: 'a\u0000b' } })
    await expect(s.createRun(refused)).rejects.toThrow(
      'PostgresRunStore: cannot store a string holding the NUL character (\\u0000): Postgres jsonb has no room for it',
    )
    expect(await s.getRun(refused.id)).toBeUndefined()
    const run = makeRun()
    await s.createRun(run)
    await expect(s.saveStep(run.id, 'a', { status: 'completed', output: '\u0000' })).rejects.toThrow(/NUL character/)
    expect((await s.getRun(run.id))?.steps).toEqual({})
  })

  it('a closed store says so', async () => {
    const s = store()
    await s.ready()
    await s.close()
    await s.close()
    await expect(s.getRun('x')).rejects.toThrow(/store for postgres:\/\/svc:\*\*\*@.* is closed/)
  })
})

const STEP_A = { status: 'completed', output: { n: 1 } } as const
const STEP_B = { status: 'completed', output: 'two' } as const

/** The rows of a schema's steps table, and what its runs' own records hold of steps. */
async function tables(schema: string) {
  const steps = await admin.unsafe<{ run_id: string; key: string; record: unknown }[]>(
    `SELECT run_id, key, record FROM ${schema}.steps ORDER BY run_id, key`,
  )
  const runs = await admin.unsafe<{ id: string; steps: unknown }[]>(`SELECT id, record->'steps' AS steps FROM ${schema}.runs ORDER BY seq`)
  return { steps: steps.map((row) => ({ ...row })), runs: runs.map((row) => ({ ...row })) }
}

/** The tags a schema's run_tag_sets table holds, as `tag id`, by run then tag. */
async function tagRows(schema: string): Promise<string[]> {
  const rows = await admin.unsafe<{ tag: string; id: string | null }[]>(
    `SELECT held.tag, r.id FROM ${schema}.run_tag_sets t CROSS JOIN unnest(t.tags) AS held(tag)
     LEFT JOIN ${schema}.runs r ON r.seq = t.run_seq ORDER BY t.run_seq, held.tag`,
  )
  return rows.map((row) => `${row.tag} ${row.id}`)
}

describe("PostgresRunStore: a run's tags as a row of their own", () => {
  it('writes a row per tag with the run, and none for a run without tags', async () => {
    const s = store()
    const tagged = await s.createRun(makeRun({ tags: ['tenant:a', 'plan:pro', 'tenant:a'] }))
    await s.createRuns([makeRun(), makeRun({ tags: ['tenant:b'] })])
    const [batched] = await s.listRuns({ limit: 1 })
    expect(await tagRows(s.schema)).toEqual([`plan:pro ${tagged.id}`, `tenant:a ${tagged.id}`, `tenant:b ${batched.id}`])
  })

  it('the tag rows of a run go with it, evicted or pruned', async () => {
    const s = store({ maxRuns: 2 })
    const finished = { status: 'completed' as const, finishedAt: '2025-01-01T00:00:00.000Z' }
    const first = await s.createRun(makeRun({ ...finished, tags: ['tenant:a'] }))
    const second = await s.createRun(makeRun({ ...finished, tags: ['tenant:a', 'plan:pro'] }))
    const third = await s.createRun(makeRun({ ...finished, tags: ['tenant:b'] }))
    expect(await s.getRun(first.id)).toBeUndefined()
    expect(await s.pruneFinished(second.taskName, '2026-01-01T00:00:00.000Z', 1)).toBe(1)
    expect((await s.listRuns({ tags: ['tenant:b'] })).map((run) => run.id)).toEqual([third.id])
    expect(await tagRows(s.schema)).toEqual([`tenant:b ${third.id}`])
  })
})

describe("PostgresRunStore: a run's steps as rows of their own", () => {
  it("keeps each step in a row of the steps table, and none in the run's record", async () => {
    const s = store()
    const run = makeRun({ steps: { a: STEP_A } })
    expect(await s.createRun(run)).toEqual(run)
    await s.saveStep(run.id, 'b', STEP_B)
    expect(await tables(s.schema)).toEqual({
      steps: [
        { run_id: run.id, key: 'a', record: STEP_A },
        { run_id: run.id, key: 'b', record: STEP_B },
      ],
      runs: [{ id: run.id, steps: {} }],
    })
  })

  it("saving a step writes its own row, not the run's; a step saved again is updated in its row", async () => {
    const s = store()
    const run = makeRun()
    await s.createRun(run)
    await s.saveStep(run.id, 'a', { status: 'timed_out' })
    const version = () => admin.unsafe(`SELECT xmin::text AS version FROM ${s.schema}.runs WHERE id = '${run.id}'`)
    const before = await version()
    await s.saveStep(run.id, 'a', STEP_A)
    await s.saveStep(run.id, 'b', STEP_B)
    // xmin is the transaction that wrote the row's current version: the same one, so no new version was written.
    expect(await version()).toEqual(before)
    expect((await tables(s.schema)).steps).toEqual([
      { run_id: run.id, key: 'a', record: STEP_A },
      { run_id: run.id, key: 'b', record: STEP_B },
    ])
    expect((await s.getRun(run.id))?.steps).toEqual({ a: STEP_A, b: STEP_B })
  })

  it('a step of a run the store does not hold is refused as an unknown run, and leaves no row', async () => {
    const s = store()
    await expect(s.saveStep('nobody', 'a', STEP_A)).rejects.toThrow('PostgresRunStore: unknown run "nobody"')
    expect((await tables(s.schema)).steps).toEqual([])
  })

  it('every read of a run hands back its steps', async () => {
    const s = store()
    const steps = { a: STEP_A, b: STEP_B }
    const withSteps = async (overrides: Parameters<typeof makeRun>[0]) => {
      const run = await s.createRun(makeRun(overrides))
      await s.saveStep(run.id, 'a', STEP_A)
      await s.saveStep(run.id, 'b', STEP_B)
      return run
    }
    const run = await withSteps({ idempotencyKey: 'k' })
    expect((await s.getRun(run.id))?.steps).toEqual(steps)
    expect((await s.listRuns()).map((r) => r.steps)).toEqual([steps])
    // The holder of an idempotency key.
    expect((await s.createRun(makeRun({ idempotencyKey: 'k' }))).steps).toEqual(steps)
    expect((await s.updateRun(run.id, { result: 1 }, { status: 'running' }))?.steps).toEqual(steps)
    // A run whose lease was given up is claimed as an orphan.
    expect(await s.shared.acquireLease('p1', run.id)).toBe(true)
    await s.shared.releaseLeases('p1', [run.id])
    expect((await s.shared.claimOrphanedRuns('p2', 10)).map((r) => [r.id, r.steps])).toEqual([[run.id, steps]])
    // Flow control: a queued run started, a scheduled run joined by a debounced trigger.
    const queued = await withSteps({ taskName: 'limited', status: 'queued' })
    const { started } = await s.startQueued('limited', { concurrency: { limit: 1 } }, new Date().toISOString())
    expect(started.map((r) => [r.id, r.steps])).toEqual([[queued.id, steps]])
    const scheduled = await withSteps({ taskName: 'debounced', status: 'scheduled', runAt: '2030-01-01T00:00:00.000Z' })
    const joined = await s.debounceRun(
      makeRun({ taskName: 'debounced', status: 'scheduled', runAt: '2030-01-01T00:01:00.000Z' }),
      undefined,
    )
    expect([joined.id, joined.steps]).toEqual([scheduled.id, steps])
  })

  it("evicts a run's steps with it", async () => {
    const s = store({ maxRuns: 1 })
    const first = await s.createRun(makeRun({ steps: { a: STEP_A } }))
    await s.saveStep(first.id, 'b', STEP_B)
    await s.updateRun(first.id, { status: 'completed' })
    const second = await s.createRun(makeRun())
    await s.saveStep(second.id, 'c', STEP_A)
    expect(await s.getRun(first.id)).toBeUndefined()
    expect((await tables(s.schema)).steps).toEqual([{ run_id: second.id, key: 'c', record: STEP_A }])
  })
})

describe('PostgresRunStore migrations', () => {
  it('creates its tables in its schema and records the version', async () => {
    const s = store()
    await s.ready()
    const tables = await admin`SELECT table_name FROM information_schema.tables WHERE table_schema = ${s.schema} ORDER BY table_name`
    expect(tables.map((t) => t.table_name)).toEqual([
      'change_listeners',
      'cron_ticks',
      'events',
      'migrations',
      'processes',
      'run_counts',
      'run_tag_sets',
      'runs',
      'schedules',
      'signals',
      'steps',
      'timers',
      'tokens',
      'updates',
    ])
    const versions = await admin.unsafe(`SELECT version FROM ${s.schema}.migrations ORDER BY version`)
    expect(versions.map((v) => v.version)).toEqual(Array.from({ length: SCHEMA_VERSION }, (_, i) => i + 1))
  })

  it('upgrades in place a schema an earlier release left at version 2, counting the runs it holds', async () => {
    const schema = freshSchema()
    const sql = postgres(url, { onnotice: () => {} })
    try {
      await migrate(sql, schema, 'test', 2)
      // Rows as the earlier release wrote them: two live runs and a finished one.
      for (const [i, status] of (['running', 'suspended', 'completed'] as const).entries()) {
        const run = makeRun({ id: `old-${i}`, status })
        await sql`
          INSERT INTO ${sql(schema)}.runs (id, task_name, status, finished_seq, record)
          VALUES (${run.id}, ${run.taskName}, ${status}, ${status === 'completed' ? 1 : null}, ${sql.json(run as never)})`
      }
    } finally {
      await sql.end()
    }
    const s = store({ schema, maxRuns: 3 })
    await s.ready()
    const versions = await admin.unsafe(`SELECT version FROM ${schema}.migrations ORDER BY version`)
    expect(versions.map((v) => v.version)).toEqual(Array.from({ length: SCHEMA_VERSION }, (_, i) => i + 1))
    expect((await s.getRun('old-1'))?.status).toBe('suspended')
    // Two live runs were counted: one more fits, and evicts the finished run to stay at 3.
    await s.createRun(makeRun({ id: 'new-1', status: 'running' }))
    expect(await s.getRun('old-2')).toBeUndefined()
    expect(await s.size()).toBe(3)
    await expect(s.createRun(makeRun({ id: 'new-2', status: 'running' }))).rejects.toBeInstanceOf(StoreFullError)
  })

  it('moves the steps that runs of a version 3 schema hold in their records into the steps table', async () => {
    const schema = freshSchema()
    const held = makeRun({ id: 'old-steps', steps: { a: STEP_A, b: STEP_B } })
    const none = makeRun({ id: 'old-none', status: 'completed' })
    const sql = postgres(url, { onnotice: () => {} })
    try {
      await migrate(sql, schema, 'test', 3)
      for (const run of [held, none]) {
        await sql`
          INSERT INTO ${sql(schema)}.runs (id, task_name, status, finished_seq, record)
          VALUES (${run.id}, ${run.taskName}, ${run.status}, ${run.status === 'completed' ? 1 : null}, ${sql.json(run as never)})`
      }
    } finally {
      await sql.end()
    }
    const s = store({ schema })
    expect(await s.getRun(held.id)).toEqual(held)
    expect(await s.getRun(none.id)).toEqual(none)
    expect(await tables(schema)).toEqual({
      steps: [
        { run_id: held.id, key: 'a', record: STEP_A },
        { run_id: held.id, key: 'b', record: STEP_B },
      ],
      runs: [
        { id: held.id, steps: {} },
        { id: none.id, steps: {} },
      ],
    })
    await s.saveStep(held.id, 'c', STEP_A)
    expect((await s.getRun(held.id))?.steps).toEqual({ ...held.steps, c: STEP_A })
  })

  it('a version 17 schema with tagged runs migrates to tag rows, and finds its runs and new ones by tag', async () => {
    const schema = freshSchema()
    const ids = (runs: { id: string }[]) => runs.map((run) => run.id)
    const old = [makeRun({ tags: ['tenant:a', 'plan:pro'] }), makeRun({ tags: ['tenant:b'], status: 'completed' }), makeRun()]
    const sql = postgres(url, { onnotice: () => {} })
    try {
      await migrate(sql, schema, 'test', 17)
      // Rows as the earlier release wrote them: the tags in the record only, which its index reads.
      for (const [i, run] of old.entries()) {
        await sql`
          INSERT INTO ${sql(schema)}.runs (id, task_name, status, finished_seq, record)
          VALUES (${run.id}, ${run.taskName}, ${run.status}, ${run.status === 'completed' ? i + 1 : null}, ${sql.json(run as never)})`
      }
    } finally {
      await sql.end()
    }
    const s = store({ schema, maxRuns: 3 })
    expect(ids(await s.listRuns({ tags: ['tenant:a'] }))).toEqual([old[0].id])
    expect(ids(await s.listRuns({ tags: ['tenant:b'] }))).toEqual([old[1].id])
    const later = await s.createRun(makeRun({ tags: ['tenant:a'] }))
    expect(ids(await s.listRuns({ tags: ['tenant:a'] }))).toEqual([later.id, old[0].id])
    expect(ids(await s.listRuns({ tags: ['tenant:a', 'plan:pro'] }))).toEqual([old[0].id])
    const indexes = await admin`SELECT indexname FROM pg_indexes WHERE schemaname = ${schema} AND tablename = 'runs'`
    expect(indexes.map((row) => row.indexname)).not.toContain('runs_by_tags')
    // The fourth run evicted the finished one, with its tag row.
    expect(await s.getRun(old[1].id)).toBeUndefined()
    expect(await tagRows(schema)).toEqual([`plan:pro ${old[0].id}`, `tenant:a ${old[0].id}`, `tenant:a ${later.id}`])
  })

  it('refuses a schema that a newer release migrated, telling to upgrade svc', async () => {
    const schema = freshSchema()
    await store({ schema }).ready()
    await admin.unsafe(`INSERT INTO ${schema}.migrations (version) VALUES (${SCHEMA_VERSION + 1})`)
    const s = store({ schema })
    await expect(s.ready()).rejects.toThrow(
      `PostgresRunStore: schema "${schema}" is at version ${SCHEMA_VERSION + 1}, newer than the ${SCHEMA_VERSION} this version of svc knows; upgrade svc`,
    )
    // Every call reports it rather than touching the tables.
    await expect(s.getRun('x')).rejects.toThrow(/upgrade svc/)
  })

  it('stores opened at the same moment migrate the schema once', async () => {
    // Each store has its own connections: to Postgres, as separate as
    // processes. The first queries of all of them go out together.
    for (let round = 0; round < 3; round++) {
      const schema = freshSchema()
      const stores = Array.from({ length: 6 }, () => store({ schema }))
      await Promise.all(stores.map((s) => s.ready()))
      await Promise.all(stores.map((s) => s.createRun(makeRun())))
      const versions = await admin.unsafe(`SELECT version FROM ${schema}.migrations`)
      expect(versions).toHaveLength(SCHEMA_VERSION)
      expect(await stores[0].size()).toBe(6)
    }
  })

  it('an unreachable database is a clear error naming it, without its password', async () => {
    const s = store({ url: 'postgres://someone:secret@127.0.0.1:1/nowhere' })
    const error = (await s.ready().catch((e: unknown) => e)) as Error
    expect(error.message).toMatch(/^PostgresRunStore: cannot use postgres:\/\/someone:\*\*\*@127\.0\.0\.1:1\/nowhere: /)
    expect(error.message).not.toContain('secret')
  })
})

describe('PostgresRunStore bound', () => {
  it('retains 10,000 runs by default', () => {
    expect(store().maxRuns).toBe(10_000)
  })

  it('evicts the runs that finished longest ago first, never live ones', async () => {
    const s = store({ maxRuns: 3 })
    const [a, b, c] = [makeRun(), makeRun(), makeRun()]
    for (const run of [a, b, c]) await s.createRun(run)
    await s.updateRun(b.id, { status: 'completed' })
    await s.updateRun(a.id, { status: 'failed' })
    // Staying finished keeps b's place at the head of the eviction order.
    await s.updateRun(b.id, { ok: true })
    await s.createRun(makeRun())
    expect(await s.getRun(b.id)).toBeUndefined()
    expect(await s.getRun(a.id)).toBeDefined()
    await s.createRun(makeRun())
    expect(await s.getRun(a.id)).toBeUndefined()
    expect(await s.getRun(c.id)).toBeDefined()
    expect(await s.size()).toBe(3)
  })

  it('a run that leaves a finished state is live again and is not evicted', async () => {
    const s = store({ maxRuns: 1 })
    const run = makeRun({ status: 'completed' })
    await s.createRun(run)
    await s.updateRun(run.id, { status: 'running' })
    await s.createRun(makeRun({ status: 'completed' }))
    expect(await s.getRun(run.id)).toBeDefined()
  })

  it('drops the idempotency key and tokens of an evicted run', async () => {
    const s = store({ maxRuns: 1 })
    const first = makeRun({ status: 'completed', idempotencyKey: 'once' })
    await s.createRun(first)
    await s.putToken({ id: 'tok', runId: first.id, stepKey: 's', status: 'completed', createdAt: first.createdAt })
    await s.createRun(makeRun({ status: 'completed' }))
    expect(await s.getRun(first.id)).toBeUndefined()
    expect(await s.getToken('tok')).toBeUndefined()
    const again = await s.createRun(makeRun({ idempotencyKey: 'once' }))
    expect(again.id).not.toBe(first.id)
  })

  it('stores sharing a schema never hold more live runs than maxRuns between them', async () => {
    for (let round = 0; round < 3; round++) {
      const schema = freshSchema()
      const stores = [store({ schema, maxRuns: 5 }), store({ schema, maxRuns: 5 }), store({ schema, maxRuns: 5 })]
      // Several connections per store open first, so the creates below run side by side.
      await Promise.all(stores.flatMap((s) => Array.from({ length: 8 }, () => s.getRun('warm-up'))))
      const attempts = await Promise.allSettled(stores.flatMap((s) => Array.from({ length: 8 }, () => s.createRun(makeRun()))))
      expect(attempts.filter((a) => a.status === 'fulfilled')).toHaveLength(5)
      expect(attempts.filter((a) => a.status === 'rejected').map((a) => (a as PromiseRejectedResult).reason.code)).toEqual(
        Array(19).fill('STORE_FULL'),
      )
      expect(await stores[0].size()).toBe(5)
    }
  })
})

describe('PostgresRunStore: stores sharing a schema', () => {
  it('of stores racing for the same timer, token or run transition, exactly one wins each', async () => {
    const schema = freshSchema()
    const [a, b] = [store({ schema }), store({ schema })]
    const count = 50
    for (let i = 0; i < count; i++) {
      const run = makeRun({ id: `r${i}`, status: 'suspended' })
      await a.createRun(run)
      await a.saveTimer({ id: `t${i}`, runId: run.id, kind: 'retry', dueAt: '2030-01-01T00:00:00.000Z' })
      await a.putToken({ id: `k${i}`, runId: run.id, stepKey: 'w', status: 'waiting', createdAt: run.createdAt })
    }
    const race = async <T>(take: (s: PostgresRunStore, i: number) => Promise<T>, won: (result: T) => boolean) => {
      const results = await Promise.all(Array.from({ length: count }, (_, i) => Promise.all([take(a, i), take(b, i)])))
      return results.map((pair) => pair.filter(won).length)
    }
    expect(
      await race(
        (s, i) => s.takeTimer(`t${i}`),
        (t) => t !== undefined,
      ),
    ).toEqual(Array(count).fill(1))
    expect(
      await race(
        (s, i) => s.settleToken(`k${i}`, 'completed', i),
        (r) => r?.settled === true,
      ),
    ).toEqual(Array(count).fill(1))
    expect(
      await race(
        (s, i) => s.updateRun(`r${i}`, { status: 'running' }, { status: 'suspended' }),
        (r) => r !== undefined,
      ),
    ).toEqual(Array(count).fill(1))
    // Keys too: of two live runs with one key, one is inserted and the other resolves to it.
    const keyed = await Promise.all([
      a.createRun(makeRun({ idempotencyKey: 'shared' })),
      b.createRun(makeRun({ idempotencyKey: 'shared' })),
    ])
    expect(keyed[0].id).toBe(keyed[1].id)
  })

  it('steps and attempts written at once by several stores are all kept', async () => {
    const schema = freshSchema()
    const [a, b] = [store({ schema }), store({ schema })]
    const run = makeRun()
    await a.createRun(run)
    await Promise.all(
      Array.from({ length: 20 }, (_, i) => [
        (i % 2 ? a : b).saveStep(run.id, `s${i}`, { status: 'completed', output: i }),
        (i % 2 ? b : a).appendAttempt(run.id, { index: i, startedAt: run.createdAt, durationMs: i }),
      ]).flat(),
    )
    const read = (await a.getRun(run.id))!
    expect(Object.keys(read.steps)).toHaveLength(20)
    expect(read.attempts.map((x) => x.index).sort((x, y) => x - y)).toEqual(Array.from({ length: 20 }, (_, i) => i))
  })
})

describe('PostgresRunStore events', () => {
  it('of stores on one schema sending one event id at once, exactly one records it, and each answers with its event', async () => {
    for (let round = 0; round < 3; round++) {
      const schema = freshSchema()
      const stores = [store({ schema }), store({ schema })]
      // Several connections per store open first, so the sends below run side by side.
      await Promise.all(stores.flatMap((s) => Array.from({ length: 8 }, () => s.eventsSince('warm-up', EPOCH, 1))))
      const time = new Date().toISOString()
      const results = await Promise.all(
        stores.flatMap((s, i) =>
          Array.from({ length: 8 }, (_, j) => s.putEvent({ id: 'delivery-1', name: 'order.paid', data: { i, j }, time })),
        ),
      )
      expect(results.filter((result) => result.created)).toHaveLength(1)
      const winner = results.find((result) => result.created)!.event
      for (const result of results) expect(result.event).toEqual(winner)
      for (const s of stores) expect(await s.eventsSince('order.paid', EPOCH, 10)).toEqual([winner])
    }
  })

  it('keeps data: null apart from no data, and hands times back as they were sent', async () => {
    const s = store()
    // Within the events' retention, which every send prunes: a minute ago, on a whole second.
    const time = new Date(Math.floor(Date.now() / 1000) * 1000 - 60_000).toISOString()
    const sent = [
      { id: 'null', name: 'n', data: null, time },
      { id: 'none', name: 'n', time },
      { id: 'zero', name: 'n', data: 0, time: new Date(Date.parse(time) + 1).toISOString() },
    ]
    for (const event of sent) expect(await s.putEvent(event)).toEqual({ event, created: true })
    const read = await s.eventsSince('n', time, 10)
    expect(read).toEqual(sent)
    expect('data' in read[0]).toBe(true)
    expect('data' in read[1]).toBe(false)
    const rows = await admin.unsafe(`SELECT id, data IS NULL AS absent, pg_typeof(time)::text AS type FROM ${s.schema}.events ORDER BY seq`)
    expect(rows.map((row) => ({ ...row }))).toEqual([
      { id: 'null', absent: false, type: 'timestamp with time zone' },
      { id: 'none', absent: true, type: 'timestamp with time zone' },
      { id: 'zero', absent: false, type: 'timestamp with time zone' },
    ])
  })

  it('an event past its retention frees its id: sent again, it is recorded anew, after the events recorded since', async () => {
    const s = store()
    const old = new Date(Date.now() - EVENT_RETENTION_MS - 60_000).toISOString()
    await s.putEvent({ id: 'a', name: 'tick', time: old })
    await s.putEvent({ id: 'b', name: 'tick', time: old })
    const between = { id: 'c', name: 'tick', time: new Date().toISOString() }
    await s.putEvent(between)
    const again = { id: 'a', name: 'tick', data: 'again', time: new Date().toISOString() }
    // The send of `a` takes its expired row over; `c`'s send pruned `b`.
    expect(await s.putEvent(again)).toEqual({ event: again, created: true })
    expect(await s.eventsSince('tick', EPOCH, 10)).toEqual([between, again])
  })

  it('prunes at most a batch of expired events a send, oldest first', async () => {
    const s = store()
    await s.ready()
    const old = Date.now() - EVENT_RETENTION_MS - 60_000
    await admin.unsafe(
      `INSERT INTO ${s.schema}.events (id, name, time)
       SELECT 'old-' || i, 'tick', to_timestamp(${old / 1000}) + i * interval '1 millisecond' FROM generate_series(1, ${EVENT_PRUNE_BATCH + 5}) AS i`,
    )
    await s.putEvent({ id: 'new', name: 'tick', time: new Date().toISOString() })
    const left = await s.eventsSince('tick', EPOCH, 1000)
    expect(left.map((event) => event.id)).toEqual(['old-101', 'old-102', 'old-103', 'old-104', 'old-105', 'new'])
  })

  it('a time that is no instant is refused when sent and matches nothing when read', async () => {
    const s = store()
    await expect(s.putEvent({ id: 'x', name: 'n', time: 'yesterday' })).rejects.toThrow(
      'PostgresRunStore: event "x" needs a time that is an ISO timestamp (got "yesterday")',
    )
    expect(await s.eventsSince('n', 'yesterday', 10)).toEqual([])
    expect(await s.eventsSince('n', EPOCH, 0)).toEqual([])
  })
})

sharedWorkContract('PostgresRunStore (stores on one schema)', () => {
  const schema = freshSchema()
  return (options) => store({ schema, ...options })
})

describe('PostgresRunStore options', () => {
  it('rejects a missing url or one that is not postgres:// or postgresql://, naming it without its password', () => {
    expect(() => new PostgresRunStore(undefined as never)).toThrow(/options must be an object with a url \(got undefined\)/)
    expect(() => new PostgresRunStore({} as never)).toThrow(/url must be a postgres:\/\/ or postgresql:\/\/ URL \(got undefined\)/)
    expect(() => new PostgresRunStore({ url: 'mysql://u:hunter2@h/db' })).toThrow(TypeError)
    expect(() => new PostgresRunStore({ url: 'mysql://u:hunter2@h/db' })).toThrow('(got "mysql://u:***@h/db")')
    expect(() => new PostgresRunStore({ url: 'not a url' })).toThrow(/postgres:\/\/ or postgresql:\/\/ URL \(got "not a url"\)/)
  })

  it('rejects a schema that is not a plain lowercase identifier', () => {
    expect(() => new PostgresRunStore({ url, schema: 'Runs' })).toThrow(/schema must be a lowercase identifier .*\(got "Runs"\)/)
    expect(() => new PostgresRunStore({ url, schema: 'a;drop' })).toThrow(TypeError)
    expect(() => new PostgresRunStore({ url, schema: '1x' })).toThrow(TypeError)
  })

  it('rejects bounds and intervals that are not positive whole numbers', () => {
    expect(() => new PostgresRunStore({ url, maxRuns: 0 })).toThrow(/maxRuns must be a whole number, 1 or more \(got 0\)/)
    expect(() => new PostgresRunStore({ url, maxRuns: 1.5 })).toThrow(RangeError)
    expect(() => new PostgresRunStore({ url, leaseMs: '5' as never })).toThrow(/leaseMs must be a whole number, 1 or more \(got "5"\)/)
    expect(() => new PostgresRunStore({ url, pollMs: -1 })).toThrow(/pollMs must be a whole number, 1 or more \(got -1\)/)
  })

  it('has the documented defaults and accepts postgresql:// too', () => {
    const s = store({ url: url.replace(/^postgres:/, 'postgresql:'), schema: undefined })
    expect([s.schema, s.maxRuns, s.leaseMs, s.pollMs]).toEqual(['svc', 10_000, 30_000, 1000])
  })
})

describe('PostgresRunStore loading', () => {
  it('importing svc or svcjs/node does not load the Postgres driver; importing svcjs/postgres does', async () => {
    const src = (path: string) => JSON.stringify(new URL(`../../src/${path}`, import.meta.url).href)
    const script = [
      `import { registerHooks } from 'node:module'`,
      `let loaded = false`,
      `registerHooks({ load(url, context, next) { if (/[\\\\/]node_modules[\\\\/]postgres[\\\\/]/.test(url)) loaded = true; return next(url, context) } })`,
      `await import(${src('index.ts')})`,
      `await import(${src('node.ts')})`,
      `console.log(loaded)`,
      `await import(${src('postgres.ts')})`,
      `console.log(loaded)`,
    ].join('\n')
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    child.stdout.on('data', (c) => (out += c))
    child.stderr.on('data', (c) => (out += c))
    const exitCode = await new Promise<number | null>((resolve) => child.once('exit', resolve))
    expect(exitCode, out).toBe(0)
    expect(out.trim().split('\n')).toEqual(['false', 'true'])
  })
})
