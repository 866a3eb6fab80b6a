import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import { SqliteRunStore } from '../../src/node.ts'
import { SCHEMA_VERSION } from '../../src/sqlite/database.ts'
import { createTables } from '../../src/runtime/tasks/sql/schema.ts'
import { jsonCopy } from '../../src/runtime/tasks/base/json-copy.ts'
import { RowCache } from '../../src/sqlite/row-cache.ts'
import { createTaskRuntime } from '../../src/runtime/tasks/index.ts'
import { until } from '../tasks/_helpers.ts'
import { makeRun, runStoreContract } from '../tasks/store-contract.ts'

const dir = mkdtempSync(join(tmpdir(), 'svc-sqlite-'))
let files = 0
const dbFile = () => join(dir, `runs-${++files}.db`)

const open: SqliteRunStore[] = []
function store(options: ConstructorParameters<typeof SqliteRunStore>[0]): SqliteRunStore {
  const s = new SqliteRunStore(options)
  open.push(s)
  return s
}
afterEach(async () => {
  for (const s of open.splice(0)) await s.close()
})
afterAll(() => rmSync(dir, { recursive: true, force: true }))

runStoreContract('SqliteRunStore (:memory:)', (options) => store({ path: ':memory:', ...options }))
runStoreContract('SqliteRunStore (file)', (options) => store({ path: dbFile(), ...options }))

describe('SqliteRunStore durability', () => {
  it('keeps runs, steps, attempts, timers and tokens after closing and reopening the file', async () => {
    const path = dbFile()
    const first = store({ path })
    const run = makeRun({ status: 'suspended', idempotencyKey: 'once' })
    await first.createRun(run)
    await first.appendAttempt(run.id, { index: 1, startedAt: run.createdAt, durationMs: 2, error: 'boom' })
    await first.saveStep(run.id, 'a', { status: 'completed', output: { n: 1 } })
    await first.updateRun(run.id, { suspended: { stepKey: 'w', waitpoint: { type: 'token', tokenId: `${run.id}:w` } } })
    const timer = { id: 't', runId: run.id, kind: 'sleep' as const, stepKey: 's', dueAt: '2030-01-01T00:00:00.000Z' }
    await first.saveTimer(timer)
    await first.putToken({ id: `${run.id}:w`, runId: run.id, stepKey: 'w', status: 'waiting', createdAt: run.createdAt })
    await first.close()

    const second = store({ path })
    const read = await second.getRun(run.id)
    expect(read).toMatchObject({
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

  it('records the schema version and refuses a file written by a newer one', async () => {
    const path = dbFile()
    await store({ path }).close()
    const { DatabaseSync } = process.getBuiltinModule('node:sqlite')
    const db = new DatabaseSync(path)
    expect(db.prepare('PRAGMA user_version').get()).toEqual({ user_version: SCHEMA_VERSION })
    expect(db.prepare('PRAGMA journal_mode').get()).toEqual({ journal_mode: 'wal' })
    db.exec(`PRAGMA user_version = ${SCHEMA_VERSION + 1}`)
    db.close()
    expect(() => new SqliteRunStore({ path })).toThrow(`newer than the ${SCHEMA_VERSION} this version of svc reads`)
  })

  it('checkpoints its WAL into the file past 10,000 pages, not past 1,000', async () => {
    const path = dbFile()
    const s = store({ path })
    const fileSize = (suffix = '') => statSync(path + suffix).size
    // Runs of about 100 KB each: a batch of 100 is some 2,500 pages of WAL.
    const input = 'x'.repeat(100_000)
    const batch = () => Promise.all(Array.from({ length: 100 }, () => s.createRun(makeRun({ input }))))
    await batch()
    expect(fileSize('-wal')).toBeGreaterThan(10_000_000)
    // SQLite's default mark (1,000 pages) would have copied them into the file by now.
    expect(fileSize()).toBeLessThan(1_000_000)
    // Past 10,000 pages (about 40 MiB) the commit checkpoints: the file holds the runs.
    for (let i = 0; i < 4; i++) await batch()
    expect(fileSize()).toBeGreaterThan(40_000_000)
    expect(await s.size()).toBe(500)
  })

  it('a closed store says so', async () => {
    const s = new SqliteRunStore({ path: ':memory:' })
    await s.close()
    await s.close()
    await expect(s.getRun('x')).rejects.toThrow(/store for :memory: is closed/)
  })
})

describe('SqliteRunStore steps', () => {
  const readFile = (path: string) => {
    const { DatabaseSync } = process.getBuiltinModule('node:sqlite')
    const db = new DatabaseSync(path, { readOnly: true })
    try {
      return {
        runs: db.prepare('SELECT id, record FROM svc_runs ORDER BY seq').all() as { id: string; record: string }[],
        steps: db.prepare('SELECT run_seq, key, record FROM svc_steps ORDER BY seq').all() as { key: string; record: string }[],
      }
    } finally {
      db.close()
    }
  }

  it("keeps each step in a row of its own, not in its run's record, and puts them back in order on every read", async () => {
    const path = dbFile()
    const s = store({ path })
    const run = await s.createRun(makeRun({ steps: { first: { status: 'completed', output: 0 } } }))
    await s.saveStep(run.id, 'b', { status: 'completed', output: { big: 'x'.repeat(1000) } })
    await s.saveStep(run.id, 'a', { status: 'timed_out' })
    // Saved again: the step keeps its place, as a key of an object does.
    await s.saveStep(run.id, 'b', { status: 'completed', output: 2 })
    const file = readFile(path)
    expect(JSON.parse(file.runs[0].record).steps).toEqual({})
    expect(file.steps.map((step) => step.key)).toEqual(['first', 'b', 'a'])
    const steps = { first: { status: 'completed', output: 0 }, b: { status: 'completed', output: 2 }, a: { status: 'timed_out' } }
    expect(Object.entries((await s.getRun(run.id))!.steps)).toEqual(Object.entries(steps))
    // A fresh store reads them from the file: by id, by list, by key, through flow control.
    await s.close()
    const again = store({ path })
    expect(Object.entries((await again.getRun(run.id))!.steps)).toEqual(Object.entries(steps))
    expect(Object.entries((await again.listRuns())[0].steps)).toEqual(Object.entries(steps))
    const ended = await again.updateRun(run.id, { status: 'completed', attempt: { index: 1, startedAt: run.createdAt, durationMs: 1 } })
    expect(ended!.steps).toEqual(steps)
    expect(JSON.parse(readFile(path).runs[0].record).steps).toEqual({})
    expect((await again.getRun(run.id))!.steps).toEqual(steps)
  })

  it('a run queued again keeps the steps it recorded when flow control starts it', async () => {
    const s = store({ path: dbFile() })
    const run = await s.createRun(makeRun({ status: 'queued' }))
    await s.saveStep(run.id, 'a', { status: 'completed', output: 1 })
    const { started } = await s.startQueued(run.taskName, { concurrency: { limit: 1 } } as never, new Date().toISOString())
    expect(started.map((r) => [r.id, r.steps])).toEqual([[run.id, { a: { status: 'completed', output: 1 } }]])
  })

  it("evicts a run's steps with it", async () => {
    const path = dbFile()
    const s = store({ path, maxRuns: 1 })
    const first = await s.createRun(makeRun())
    await s.saveStep(first.id, 'a', { status: 'completed', output: 1 })
    await s.updateRun(first.id, { status: 'completed' })
    const second = await s.createRun(makeRun())
    await s.saveStep(second.id, 'b', { status: 'completed', output: 2 })
    expect(await s.getRun(first.id)).toBeUndefined()
    expect(readFile(path).steps.map((step) => step.key)).toEqual(['b'])
  })

  it('moves the steps of a file written by schema version 1 into their table, in order', async () => {
    const path = dbFile()
    const { DatabaseSync } = process.getBuiltinModule('node:sqlite')
    const db = new DatabaseSync(path)
    db.exec(createTables({ timerDueAt: false }))
    db.exec('PRAGMA user_version = 1')
    const live = makeRun({ status: 'suspended', steps: { z: { status: 'completed', output: 'é\u2028' }, a: { status: 'timed_out' } } })
    const done = makeRun({ status: 'completed', steps: { only: { status: 'completed', output: [1, 2] } } })
    const bare = makeRun({ status: 'completed' })
    const insert = db.prepare('INSERT INTO svc_runs (id, task_name, status, finished_seq, record) VALUES (?, ?, ?, ?, ?)')
    insert.run(live.id, live.taskName, live.status, null, JSON.stringify(live))
    insert.run(done.id, done.taskName, done.status, 1, JSON.stringify(done))
    insert.run(bare.id, bare.taskName, bare.status, 2, JSON.stringify(bare))
    db.close()
    const s = store({ path })
    for (const run of [live, done, bare]) {
      const read = (await s.getRun(run.id))!
      expect(read).toEqual(run)
      expect(Object.keys(read.steps)).toEqual(Object.keys(run.steps))
    }
    await s.saveStep(live.id, 'next', { status: 'completed', output: 3 })
    expect(Object.keys((await s.getRun(live.id))!.steps)).toEqual(['z', 'a', 'next'])
    await s.close()
    const file = readFile(path)
    expect(file.runs.map((row) => JSON.parse(row.record).steps)).toEqual([{}, {}, {}])
    expect(file.steps.map((step) => step.key)).toEqual(['z', 'a', 'only', 'next'])
  })
})

describe('SqliteRunStore loading', () => {
  it('importing svcjs/node does not load node:sqlite; creating a store does', async () => {
    // On Node versions that print an ExperimentalWarning for node:sqlite, this
    // keeps the warning away from apps that never create a SqliteRunStore.
    const entry = new URL('../../src/node.ts', import.meta.url).href
    const script = [
      `const loaded = () => process.moduleLoadList.some((m) => /\\bsqlite\\b/.test(m))`,
      `const node = await import(${JSON.stringify(entry)})`,
      `console.log(loaded())`,
      `new node.SqliteRunStore({ path: ':memory:' }).close()`,
      `console.log(loaded())`,
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

describe('SqliteRunStore bound', () => {
  it('retains 10,000 runs by default', () => {
    expect(store({ path: ':memory:' }).maxRuns).toBe(10_000)
  })

  it('evicts the runs that finished longest ago first, never live ones', async () => {
    const s = store({ path: dbFile(), maxRuns: 3 })
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

  it('evicts finished runs to make room for a live one, never live runs', async () => {
    const s = store({ path: ':memory:', maxRuns: 2 })
    const [live, done] = [makeRun({ status: 'scheduled' }), makeRun({ status: 'completed' })]
    for (const run of [live, done]) await s.createRun(run)
    const next = makeRun({ status: 'running' })
    await s.createRun(next)
    expect(await s.getRun(done.id)).toBeUndefined()
    expect(await s.getRun(live.id)).toBeDefined()
    expect(await s.size()).toBe(2)
    await expect(s.createRun(makeRun())).rejects.toMatchObject({ code: 'STORE_FULL' })
    expect(await s.size()).toBe(2)
  })

  it('a run that leaves a finished state is live again and is not evicted', async () => {
    const s = store({ path: ':memory:', maxRuns: 1 })
    const run = makeRun({ status: 'completed' })
    await s.createRun(run)
    await s.updateRun(run.id, { status: 'running' })
    await s.createRun(makeRun({ status: 'completed' }))
    expect(await s.getRun(run.id)).toBeDefined()
  })

  it('a batch that goes past the bound commits with it holding: the runs that finished longest ago go, live ones stay', async () => {
    const path = dbFile()
    const s = store({ path, maxRuns: 5 })
    const live = [makeRun({ status: 'running' }), makeRun({ status: 'scheduled' })]
    for (const run of live) await s.createRun(run)
    // One turn: 12 finished runs and a live one, so one batch 10 runs past the bound.
    const finished = Array.from({ length: 12 }, () => makeRun({ status: 'completed' }))
    const late = makeRun({ status: 'running' })
    await Promise.all([...finished.map((run) => s.createRun(run)), s.createRun(late)])
    const { DatabaseSync } = process.getBuiltinModule('node:sqlite')
    const other = new DatabaseSync(path, { readOnly: true })
    try {
      const ids = (other.prepare('SELECT id FROM svc_runs ORDER BY seq').all() as { id: string }[]).map((row) => row.id)
      expect(ids).toEqual([...live, ...finished.slice(-2), late].map((run) => run.id))
    } finally {
      other.close()
    }
    expect(await s.size()).toBe(5)
    expect(await s.getRun(finished[0].id)).toBeUndefined()
    expect(await s.getRun(finished[11].id)).toBeDefined()
  })

  it('drops the idempotency key and tokens of an evicted run', async () => {
    const s = store({ path: ':memory:', maxRuns: 1 })
    const first = makeRun({ status: 'completed', idempotencyKey: 'once' })
    await s.createRun(first)
    await s.putToken({ id: 'tok', runId: first.id, stepKey: 's', status: 'completed', createdAt: first.createdAt })
    await s.createRun(makeRun({ status: 'completed' }))
    expect(await s.getRun(first.id)).toBeUndefined()
    expect(await s.getToken('tok')).toBeUndefined()
    const again = await s.createRun(makeRun({ idempotencyKey: 'once' }))
    expect(again.id).not.toBe(first.id)
  })
})

describe('SqliteRunStore options', () => {
  it('rejects a missing or empty path with a TypeError naming it', () => {
    expect(() => new SqliteRunStore({} as never)).toThrow(/path must be a database file path or ':memory:' \(got undefined\)/)
    expect(() => new SqliteRunStore({ path: '' })).toThrow(TypeError)
    expect(() => new SqliteRunStore(undefined as never)).toThrow(/options must be an object with a path \(got undefined\)/)
  })

  it('rejects a bound that is not a positive whole number', () => {
    expect(() => new SqliteRunStore({ path: ':memory:', maxRuns: 0 })).toThrow(/maxRuns must be a whole number, 1 or more \(got 0\)/)
    expect(() => new SqliteRunStore({ path: ':memory:', maxRuns: 1.5 })).toThrow(RangeError)
    expect(() => new SqliteRunStore({ path: ':memory:', maxRuns: '5' as never })).toThrow(TypeError)
    expect(() => new SqliteRunStore({ path: ':memory:', busyTimeoutMs: -1 })).toThrow(
      /busyTimeoutMs must be a whole number, 0 or more \(got -1\)/,
    )
  })

  it('names the file it cannot open', () => {
    expect(() => new SqliteRunStore({ path: join(dir, 'missing-dir', 'x.db') })).toThrow(/cannot open .*missing-dir/)
  })
})

describe('SqliteRunStore: several stores on one file', () => {
  it('processes racing for the same timers and runs never both win one', async () => {
    const path = dbFile()
    const seed = store({ path })
    const count = 300
    for (let i = 0; i < count; i++) {
      await seed.saveTimer({ id: `t${i}`, runId: `r${i}`, kind: 'retry', dueAt: '2030-01-01T00:00:00.000Z' })
      await seed.createRun(makeRun({ id: `r${i}`, status: 'suspended' }))
    }
    const script = fileURLToPath(new URL('../fixtures/sqlite-race/contend.ts', import.meta.url))
    const children = [0, 1, 2].map(() => {
      const child = spawn(process.execPath, [script, path, String(count)], { stdio: ['pipe', 'pipe', 'pipe'] })
      const out = { text: '', err: '' }
      child.stdout.on('data', (c) => (out.text += c))
      child.stderr.on('data', (c) => (out.err += c))
      const exited = new Promise<number | null>((resolve) => child.once('exit', resolve))
      return { child, out, exited }
    })
    try {
      for (const { out } of children) await until(() => out.text.includes('ready'), 15_000)
      for (const { child } of children) child.stdin.write(`go ${Date.now() + 100}\n`)
      const codes = await Promise.all(children.map((c) => c.exited))
      expect(codes, children.map((c) => c.out.err).join('\n')).toEqual([0, 0, 0])
    } finally {
      for (const { child } of children) child.kill('SIGKILL')
    }
    const results = children.map(({ out }) => JSON.parse(out.text.split('\n')[1]) as { timers: string[]; runs: string[] })
    const timers = results.flatMap((r) => r.timers)
    const runs = results.flatMap((r) => r.runs)
    // Every item was won exactly once, whichever process won it.
    expect(timers).toHaveLength(count)
    expect(new Set(timers).size).toBe(count)
    expect(runs).toHaveLength(count)
    expect(new Set(runs).size).toBe(count)
    expect(await seed.listTimers()).toEqual([])
    expect(await seed.listRuns({ status: 'suspended' })).toEqual([])
  })

  it("counts the other one's live runs against the bound", async () => {
    const path = dbFile()
    const [a, b] = [store({ path, maxRuns: 2 }), store({ path, maxRuns: 2 })]
    await a.createRun(makeRun({ status: 'scheduled' }))
    await b.createRun(makeRun({ status: 'scheduled' }))
    await expect(a.createRun(makeRun())).rejects.toMatchObject({ code: 'STORE_FULL', status: 503 })
    await expect(b.createRun(makeRun())).rejects.toMatchObject({ code: 'STORE_FULL', status: 503 })
    expect(await a.size()).toBe(2)
  })

  it('reads a run the other one changed, after reading it before the change', async () => {
    const path = dbFile()
    const [a, b] = [store({ path }), store({ path })]
    const run = await a.createRun(makeRun({ status: 'scheduled' }))
    expect(await b.getRun(run.id)).toMatchObject({ status: 'scheduled' })
    await a.updateRun(run.id, { status: 'running' }, { status: 'scheduled' })
    expect(await b.getRun(run.id)).toMatchObject({ status: 'running' })
    expect(await b.updateRun(run.id, { status: 'completed' }, { status: 'scheduled' })).toBeUndefined()
  })

  it('reads a run another process changed, from the next event-loop turn on', async () => {
    const path = dbFile()
    const s = store({ path })
    const run = await s.createRun(makeRun({ status: 'scheduled' }))
    expect(await s.getRun(run.id)).toMatchObject({ status: 'scheduled' })
    // Another connection, as another process would hold: nothing in this process hears of its commit.
    const { DatabaseSync } = process.getBuiltinModule('node:sqlite')
    const other = new DatabaseSync(path)
    other
      .prepare('UPDATE svc_runs SET status = ?, record = ? WHERE id = ?')
      .run('running', JSON.stringify({ ...run, status: 'running' }), run.id)
    other.close()
    await new Promise((resolve) => setImmediate(resolve))
    expect(await s.getRun(run.id)).toMatchObject({ status: 'running' })
    expect(await s.updateRun(run.id, { status: 'completed' }, { status: 'scheduled' })).toBeUndefined()
    expect(await s.updateRun(run.id, { status: 'completed' }, { status: 'running' })).toMatchObject({ status: 'completed' })
  })

  it("sees the other one's writes: one idempotency key yields one run, one token settles once", async () => {
    const path = dbFile()
    const [a, b] = [store({ path }), store({ path })]
    const first = await a.createRun(makeRun({ idempotencyKey: 'k' }))
    const second = await b.createRun(makeRun({ idempotencyKey: 'k' }))
    expect(second.id).toBe(first.id)
    const token = { id: 'tok', runId: first.id, stepKey: 'w', status: 'waiting' as const, createdAt: first.createdAt }
    await a.putToken(token)
    expect((await b.settleToken('tok', 'completed', 1))?.settled).toBe(true)
    expect(await a.settleToken('tok', 'timed_out')).toMatchObject({ settled: false, token: { status: 'completed', payload: 1 } })
    expect(await a.takeTimer('none')).toBeUndefined()
  })

  it("opens and closes a store on a file while another store of this process has a batch open, without waiting for that batch's lock", async () => {
    const path = dbFile()
    const a = store({ path, busyTimeoutMs: 200 })
    // The batch holds the file's write lock until the end of this turn;
    // the event loop cannot end it while a constructor waits for the lock.
    const written = a.createRun(makeRun({ id: 'r' }))
    const b = store({ path, busyTimeoutMs: 200 })
    const later = a.createRun(makeRun({ id: 's' }))
    await b.close()
    await Promise.all([written, later])
    expect((await store({ path }).listRuns()).map((run) => run.id).sort()).toEqual(['r', 's'])
  })
})

describe('SqliteRunStore group commit', () => {
  const committedRuns = (path: string) => {
    // A second connection sees only what has been committed.
    const { DatabaseSync } = process.getBuiltinModule('node:sqlite')
    const db = new DatabaseSync(path, { readOnly: true })
    try {
      return Number((db.prepare('SELECT count(*) AS n FROM svc_runs').get() as { n: number }).n)
    } finally {
      db.close()
    }
  }

  it('the writes of one turn commit together, and none resolves before that commit', async () => {
    const path = dbFile()
    const s = store({ path })
    const order: string[] = []
    const writes = Array.from({ length: 50 }, () =>
      s.createRun(makeRun()).then(() => order.push(`resolved with ${committedRuns(path)} committed`)),
    )
    expect(committedRuns(path)).toBe(0)
    await Promise.all(writes)
    expect(new Set(order)).toEqual(new Set(['resolved with 50 committed']))
  })

  it('a write of one statement that fails without a savepoint leaves the rest of its batch, and nothing of its own', async () => {
    const path = dbFile()
    const s = store({ path })
    const first = makeRun({ status: 'running' })
    const other = makeRun({ status: 'running' })
    // One turn, one batch: the second insert of an id fails on its UNIQUE
    // constraint, and a step of a run that does not exist fails before it writes.
    const writes = [
      s.createRun(first),
      s.createRun({ ...first, input: 'again' }),
      s.saveStep('nobody', 'a', { status: 'completed' }),
      s.createRun(other),
      s.saveStep(first.id, 'a', { status: 'completed', output: 1 }),
    ]
    const settled = await Promise.allSettled(writes)
    expect(settled.map((outcome) => outcome.status)).toEqual(['fulfilled', 'rejected', 'rejected', 'fulfilled', 'fulfilled'])
    expect(String((settled[1] as PromiseRejectedResult).reason)).toMatch(/already exists/)
    expect(committedRuns(path)).toBe(2)
    const reopened = store({ path })
    expect(await reopened.getRun(first.id)).toMatchObject({ input: first.input, steps: { a: { output: 1 } } })
    expect(await reopened.getRun(other.id)).toMatchObject({ status: 'running' })
    expect(await reopened.size()).toBe(2)
  })

  it("waitForRun answers with a run's end only once that end is committed", async () => {
    const path = dbFile()
    const s = store({ path })
    const committedStatus = (id: string) => {
      const { DatabaseSync } = process.getBuiltinModule('node:sqlite')
      const db = new DatabaseSync(path, { readOnly: true })
      try {
        return (db.prepare('SELECT status FROM svc_runs WHERE id = ?').get(id) as { status: string } | undefined)?.status
      } finally {
        db.close()
      }
    }
    const rt = createTaskRuntime({
      routes: [
        { path: '/api/ok', module: { kind: 'task', POST: () => 'done' } },
        {
          path: '/api/boom',
          module: {
            kind: 'task',
            POST: () => {
              throw new Error('boom')
            },
          },
        },
      ],
      store: s,
      logger: { info() {}, warn() {}, error() {} },
      env: {},
    })
    try {
      // Each waiter is registered once trigger() resolves, while the attempt's end is being written.
      const seen = await Promise.all(
        Array.from({ length: 20 }, async (_, i) => {
          const run = await rt.trigger(i % 2 === 0 ? 'ok' : 'boom')
          const done = await rt.waitForRun(run.id)
          return `${done.status}/${committedStatus(run.id)}`
        }),
      )
      expect(new Set(seen)).toEqual(new Set(['completed/completed', 'failed/failed']))
    } finally {
      await rt.close()
    }
  })

  it('a write that fails or a compare-and-set that loses leaves the other writes of its batch in place', async () => {
    const path = dbFile()
    const s = store({ path, maxRuns: 2 })
    const [a, b] = [makeRun({ status: 'scheduled' }), makeRun({ status: 'scheduled' })]
    const outcomes = await Promise.allSettled([
      s.createRun(a),
      s.createRun(a),
      s.updateRun(a.id, { ok: false }, { status: 'completed' }),
      s.createRun(b),
      s.createRun(makeRun()),
      s.saveStep(b.id, 'x', { status: 'completed', output: 1 }),
      s.saveStep('missing', 'x', { status: 'completed' }),
      s.updateRun(a.id, { status: 'running' }, { status: 'scheduled' }),
    ])
    expect(outcomes.map((o) => o.status)).toEqual([
      'fulfilled',
      'rejected',
      'fulfilled',
      'fulfilled',
      'rejected',
      'fulfilled',
      'rejected',
      'fulfilled',
    ])
    expect(outcomes[2]).toEqual({ status: 'fulfilled', value: undefined })
    expect((outcomes[4] as PromiseRejectedResult).reason).toMatchObject({ code: 'STORE_FULL' })
    await s.close()
    const reopened = store({ path })
    expect(await reopened.getRun(a.id)).toMatchObject({ status: 'running', ok: true })
    expect(await reopened.getRun(b.id)).toMatchObject({ steps: { x: { status: 'completed', output: 1 } } })
    expect(await reopened.size()).toBe(2)
  })

  it('close() commits the writes still waiting for their batch', async () => {
    const path = dbFile()
    const s = new SqliteRunStore({ path })
    const run = makeRun()
    const written = s.createRun(run)
    await s.close()
    await expect(written).resolves.toMatchObject({ id: run.id })
    expect(committedRuns(path)).toBe(1)
  })

  it('every write that resolved before a kill -9 is in the file afterwards', async () => {
    const path = dbFile()
    const entry = new URL('../../src/sqlite/store.ts', import.meta.url).href
    // Batches of concurrent writes, each id printed once its write resolved.
    const script = [
      `const { SqliteRunStore } = await import(${JSON.stringify(entry)})`,
      `const store = new SqliteRunStore({ path: ${JSON.stringify(path)}, maxRuns: 1_000_000 })`,
      'for (let batch = 0; ; batch++) {',
      '  await Promise.all(Array.from({ length: 20 }, (_, i) => {',
      "    const id = 'run-' + batch + '-' + i",
      "    return store.createRun({ id, taskName: 't', status: 'running', trigger: 'manual', ok: true, attempts: [], steps: {}, createdAt: new Date().toISOString() })",
      "      .then(() => process.stdout.write(id + '\\n'))",
      '  }))',
      '}',
    ].join('\n')
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    let err = ''
    child.stdout.on('data', (c) => (out += c))
    child.stderr.on('data', (c) => (err += c))
    const exited = new Promise((resolve) => child.once('exit', resolve))
    const resolvedIds = () => out.split('\n').filter((line) => /^run-\d+-\d+$/.test(line))
    await until(() => resolvedIds().length >= 500 || child.exitCode !== null, 15_000)
    child.kill('SIGKILL')
    await exited
    expect(err).toBe('')
    const resolved = resolvedIds()
    expect(resolved.length).toBeGreaterThanOrEqual(500)
    const s = store({ path })
    const kept = new Set((await s.listRuns()).map((run) => run.id))
    expect(resolved.filter((id) => !kept.has(id))).toEqual([])
  })
})

describe('SqliteRunStore records in memory', () => {
  it('a run created, changed and read back within one turn is read as last written, and committed so', async () => {
    const path = dbFile()
    const s = store({ path })
    const run = makeRun()
    const attempt = { index: 1, startedAt: run.createdAt, durationMs: 2 }
    const writes = [
      s.createRun(run),
      s.saveStep(run.id, 'a', { status: 'completed', output: { n: 1 } }),
      s.appendAttempt(run.id, attempt),
      s.updateRun(run.id, { status: 'completed', result: 'done' }, { status: 'running' }),
    ]
    const expected = { status: 'completed', result: 'done', attempts: [attempt], steps: { a: { status: 'completed', output: { n: 1 } } } }
    // Still the same turn: nothing is committed yet, and the reads see every write before them.
    const read = s.getRun(run.id)
    expect(await s.updateRun(run.id, { ok: false }, { status: 'running' })).toBeUndefined()
    await Promise.all(writes)
    expect(await read).toMatchObject(expected)
    await s.close()
    expect(await store({ path }).getRun(run.id)).toMatchObject(expected)
  })

  it('keeps what it was given: changing a record, value or copy after the call changes nothing stored', async () => {
    const path = dbFile()
    const s = store({ path })
    const run = makeRun({ input: { user: { name: 'a' }, tags: ['x'] } })
    const created = await s.createRun(run)
    ;(run.input as { user: { name: string } }).user.name = 'changed'
    ;(created.input as { tags: string[] }).tags.push('y')
    const attempt = { index: 1, startedAt: run.createdAt, durationMs: 1 }
    await s.appendAttempt(run.id, attempt)
    attempt.durationMs = 99
    const output = { list: [1] }
    await s.saveStep(run.id, 'a', { status: 'completed', output })
    output.list.push(2)
    const result = { rows: [1] }
    const updated = await s.updateRun(run.id, { result })
    result.rows.push(2)
    ;(updated!.result as { rows: number[] }).rows.push(3)
    const read = await s.getRun(run.id)
    ;(read!.steps.a.output as { list: number[] }).list.push(3)
    read!.attempts[0].durationMs = 7
    const expected = {
      input: { user: { name: 'a' }, tags: ['x'] },
      attempts: [{ index: 1, startedAt: run.createdAt, durationMs: 1 }],
      steps: { a: { status: 'completed', output: { list: [1] } } },
      result: { rows: [1] },
    }
    expect(await s.getRun(run.id)).toMatchObject(expected)
    await s.close()
    expect(await store({ path }).getRun(run.id)).toMatchObject(expected)
  })

  it('hands values back as JSON would, before and after the run finishes', async () => {
    const s = store({ path: dbFile() })
    const input = { when: new Date(Date.UTC(2025, 0, 2)), gone: undefined, list: [undefined, Number.NaN, -0] }
    const asJson = JSON.parse(JSON.stringify(input))
    const run = makeRun({ input })
    expect((await s.createRun(run)).input).toStrictEqual(asJson)
    expect((await s.getRun(run.id))!.input).toStrictEqual(asJson)
    const result = { at: new Date(Date.UTC(2025, 0, 3)), n: Number.POSITIVE_INFINITY }
    const done = await s.updateRun(run.id, { status: 'completed', result }, { status: 'running' })
    expect(done!.result).toStrictEqual({ at: '2025-01-03T00:00:00.000Z', n: null })
    expect(await s.getRun(run.id)).toStrictEqual(done)
  })

  it('counts the live runs another connection added between two batches against the bound', async () => {
    const path = dbFile()
    const s = store({ path, maxRuns: 2 })
    await s.createRun(makeRun({ status: 'scheduled' }))
    // As another process would: nothing in this process hears of its commit.
    const { DatabaseSync } = process.getBuiltinModule('node:sqlite')
    const other = new DatabaseSync(path)
    const foreign = makeRun({ status: 'scheduled' })
    other
      .prepare('INSERT INTO svc_runs (id, task_name, status, finished_seq, record) VALUES (?, ?, ?, NULL, ?)')
      .run(foreign.id, foreign.taskName, foreign.status, JSON.stringify(foreign))
    other.close()
    await expect(s.createRun(makeRun({ status: 'scheduled' }))).rejects.toMatchObject({ code: 'STORE_FULL' })
    expect(await s.size()).toBe(2)
  })
})

describe('SqliteRunStore row cache', () => {
  const row = (seq: number) => ({ seq, finished_seq: seq, text: '{}', weight: 0 })

  it('past its weight, drops the rows cached first; a row written again keeps its place', () => {
    // Each row weighs its overhead (128) plus its text's length.
    const cache = new RowCache(3 * 138)
    cache.set('a', row(1), 10)
    cache.set('b', row(2), 10)
    cache.set('c', row(3), 10)
    cache.set('a', row(4), 10)
    cache.set('d', row(5), 10)
    expect(['a', 'b', 'c', 'd'].map((id) => cache.get(id)?.seq)).toEqual([undefined, 2, 3, 5])
    // A parsed record weighs three times its text.
    cache.set('e', { seq: 6, finished_seq: null, run: makeRun(), weight: 0 }, 10)
    expect(['b', 'c', 'd', 'e'].map((id) => cache.get(id)?.seq)).toEqual([undefined, undefined, 5, 6])
  })

  it('empties itself when the data version moved, and says whether it did', () => {
    const cache = new RowCache(1_000_000)
    expect(cache.check(1)).toBe(false)
    cache.set('a', row(1), 2)
    expect(cache.check(1)).toBe(true)
    expect(cache.get('a')?.seq).toBe(1)
    expect(cache.check(2)).toBe(false)
    expect(cache.get('a')).toBeUndefined()
  })
})

describe('jsonCopy', () => {
  const roundTrip = (value: unknown) => {
    const text = JSON.stringify(value)
    return text === undefined ? undefined : JSON.parse(text)
  }

  it('equals a round trip through JSON text', () => {
    class Point {
      x = 1
      y = 2
    }
    const values: unknown[] = [
      undefined,
      null,
      1.5,
      -0,
      Number.NaN,
      Number.NEGATIVE_INFINITY,
      'é \ud800 "quoted"',
      false,
      new Date(0),
      { toJSON: (key: string) => `key:${key}` },
      { inner: { toJSON: (key: string) => `key:${key}` }, list: [{ toJSON: (key: string) => `key:${key}` }] },
      [undefined, () => 1, Symbol('s'), new Number(2), new String('s'), new Boolean(false)],
      { f() {}, u: undefined, s: Symbol('s'), gone: { toJSON: () => undefined }, kept: [{ toJSON: () => undefined }] },
      new Point(),
      Object.assign(Object.create(null), { a: 1 }),
      { 2: 'two', b: 'b', 1: 'one' },
      [[[{ deep: [1, { deeper: true }] }]]],
      () => 1,
    ]
    for (const value of values) expect(jsonCopy(value)).toStrictEqual(roundTrip(value))
  })

  it('keeps a "__proto__" member as data, as JSON.parse does', () => {
    const value = JSON.parse('{"__proto__": {"polluted": true}, "a": 1}')
    const copy = jsonCopy(value)
    expect(Object.getPrototypeOf(copy)).toBe(Object.prototype)
    expect(Object.keys(copy)).toEqual(['__proto__', 'a'])
    expect(({} as { polluted?: boolean }).polluted).toBeUndefined()
    expect(JSON.stringify(copy)).toBe(JSON.stringify(value))
  })

  it('throws on a BigInt, as JSON.stringify does', () => {
    expect(() => jsonCopy({ n: 1n })).toThrow(TypeError)
  })
})
