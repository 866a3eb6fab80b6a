// The SQL the SQLite-family stores share runs on an asynchronous driver as
// it does on a synchronous one (src/runtime/tasks/sql/procedure.ts). A store
// written as a D1 or libSQL store would be (each statement awaited, each
// operation one transaction on one connection) runs the flow-control
// contract and the migration chain on real SQLite tables, through a driver
// that hands every statement's answer back only on a later turn of the
// event loop.
import { DatabaseSync } from 'node:sqlite'
import { afterEach, describe, expect, it } from 'vitest'
import type { FlowLimits } from '../../src/runtime/tasks/flow/flow.ts'
import { joinScheduledSql, startQueuedSql } from '../../src/runtime/tasks/sql/flow.ts'
import {
  type AsyncSqlRunner,
  read,
  runProcedure,
  runProcedureAsync,
  type SqlProcedure,
  type SqlRunner,
  type SqlValue,
  write,
} from '../../src/runtime/tasks/sql/procedure.ts'
import {
  INSERT_RUN,
  insertRunValues,
  LAST_FINISHED_SEQ,
  listRunsQuery,
  type RunRow,
  SELECT_RUN,
  SELECT_RUN_BY_KEY,
  UPDATE_RUN,
  UPSERT_STEP,
} from '../../src/runtime/tasks/sql/queries.ts'
import { migrateSchema, migrationSteps } from '../../src/runtime/tasks/sql/migrations.ts'
import { SEARCH_TABLES } from '../../src/runtime/tasks/sql/search.ts'
import { rowText } from '../../src/runtime/tasks/sql/record-text.ts'
import { fileDriver } from '../../src/sqlite/database.ts'
import { createTables, STEPS_TABLE } from '../../src/runtime/tasks/sql/schema.ts'
import {
  applyRunPatch,
  isFinished,
  type RunPatch,
  type RunQuery,
  type RunStore,
  type StartedRuns,
  statusMatches,
} from '../../src/runtime/tasks/store/store.ts'
import type { RunRecord, RunStatus } from '../../src/types.ts'
import { flowStoreContract } from './flow-store-contract.ts'
import { makeRun } from './store-contract.ts'

const open: DatabaseSync[] = []
afterEach(() => {
  for (const db of open.splice(0)) db.close()
})

/** A fresh database with the tables of the SQLite stores. */
function database(): DatabaseSync {
  const db = new DatabaseSync(':memory:')
  db.exec(createTables({ timerDueAt: false }) + STEPS_TABLE + SEARCH_TABLES)
  open.push(db)
  return db
}

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve))

/** node:sqlite behind a driver that answers each statement on a later turn, as a network driver does. */
function asyncDriver(db: DatabaseSync): AsyncSqlRunner & { statements: number } {
  const driver = {
    statements: 0,
    async all(query: string, params: readonly SqlValue[]) {
      await nextTurn()
      driver.statements++
      return db.prepare(query).all(...params) as Record<string, unknown>[]
    },
    async run(query: string, params: readonly SqlValue[]) {
      await nextTurn()
      driver.statements++
      db.prepare(query).run(...params)
    },
  }
  return driver
}

function syncDriver(db: DatabaseSync): SqlRunner {
  return {
    all: (query, params) => db.prepare(query).all(...params) as Record<string, unknown>[],
    run: (query, params) => {
      db.prepare(query).run(...params)
    },
  }
}

// The operations the shared SQL leaves to each store, written as procedures too.

function* insertRun(run: RunRecord): SqlProcedure<RunRecord> {
  if (run.idempotencyKey !== undefined) {
    const [held] = yield read(SELECT_RUN_BY_KEY, run.taskName, run.idempotencyKey)
    if (held) return JSON.parse(held.record as string) as RunRecord
  }
  const [last] = isFinished(run.status) ? yield read(LAST_FINISHED_SEQ) : [undefined]
  const finishSeq = last ? Number(last.n ?? 0) + 1 : null
  const [row] = yield read(`${INSERT_RUN} RETURNING seq`, ...insertRunValues(run, finishSeq, rowText(run)))
  for (const key in run.steps) yield write(UPSERT_STEP, row.seq as number, key, JSON.stringify(run.steps[key]))
  return JSON.parse(JSON.stringify(run)) as RunRecord
}

function* readRun(id: string): SqlProcedure<RunRecord | undefined> {
  const [row] = yield read(SELECT_RUN, id)
  return row && (JSON.parse(row.record as string) as RunRecord)
}

function* updateRun(
  id: string,
  patch: RunPatch,
  expect?: { status: RunStatus | readonly RunStatus[] },
): SqlProcedure<RunRecord | undefined> {
  const [row] = (yield read(SELECT_RUN, id)) as unknown as RunRow[]
  if (!row) return undefined
  const run = JSON.parse(row.record) as RunRecord
  if (expect && !statusMatches(run.status, expect.status)) return undefined
  applyRunPatch(run, patch)
  const [last] = isFinished(run.status) && row.finished_seq === null ? yield read(LAST_FINISHED_SEQ) : [undefined]
  const finishSeq = !isFinished(run.status) ? null : last ? Number(last.n ?? 0) + 1 : row.finished_seq
  yield write(UPDATE_RUN, run.status, finishSeq, rowText(run), row.seq)
  return run
}

function* listRuns(query: RunQuery): SqlProcedure<RunRecord[]> {
  const list = listRunsQuery(query)
  if (!list) return []
  return (yield read(list.text, ...list.params)).map((row) => JSON.parse(row.record as string) as RunRecord)
}

/**
 * A run store on an asynchronous driver: every operation is one
 * transaction, and the transactions of its one connection take turns, as
 * libSQL's `transaction()` has them do. Only what the flow contract calls.
 */
function asyncStore(db: DatabaseSync): RunStore & { driver: ReturnType<typeof asyncDriver> } {
  const driver = asyncDriver(db)
  let turn: Promise<unknown> = Promise.resolve()
  const transaction = <T>(procedure: SqlProcedure<T>): Promise<T> => {
    const result = turn.then(async () => {
      await driver.run('BEGIN IMMEDIATE', [])
      try {
        const value = await runProcedureAsync(procedure, driver)
        await driver.run('COMMIT', [])
        return value
      } catch (error) {
        await driver.run('ROLLBACK', [])
        throw error
      }
    })
    turn = result.catch(() => {})
    return result
  }
  const unused = () => Promise.reject(new Error('not part of this test store'))
  return {
    driver,
    durable: true,
    createRun: (run) => transaction(insertRun(run)),
    getRun: (id) => transaction(readRun(id)),
    updateRun: (id, patch, expect) => transaction(updateRun(id, patch, expect)),
    listRuns: (query = {}) => transaction(listRuns(query)),
    startQueued: async (taskName: string, limits: FlowLimits, now: string): Promise<StartedRuns> =>
      (await transaction(startQueuedSql(taskName, limits, now))).result,
    debounceRun: (run, keyPath) =>
      transaction(
        (function* () {
          const held = run.idempotencyKey !== undefined && (yield read(SELECT_RUN_BY_KEY, run.taskName, run.idempotencyKey)).length > 0
          const join = held ? undefined : yield* joinScheduledSql(run, keyPath)
          return join ? join.joined : yield* insertRun(run)
        })(),
      ),
    appendAttempt: unused,
    saveStep: unused,
    countRunsByTask: unused,
    saveTimer: unused,
    takeTimer: unused,
    listTimers: unused,
    putToken: unused,
    getToken: unused,
    settleToken: unused,
  }
}

flowStoreContract('the shared flow SQL on an asynchronous driver', () => asyncStore(database()))

describe('shared SQL procedures', () => {
  const now = '2025-01-01T00:10:00.000Z'
  const limits: FlowLimits = { concurrency: { limit: 1, key: 'input.user' }, rateLimit: { limit: 3, periodSeconds: 60 } }

  async function seed(store: RunStore): Promise<void> {
    await store.createRun(makeRun({ id: 'done', status: 'completed', startedAt: '2025-01-01T00:09:30.000Z', input: { user: 'a' } }))
    for (const [i, user] of ['a', 'a', 'b', 'c'].entries())
      await store.createRun(makeRun({ id: `q${i}`, status: 'queued', input: { user } }))
  }

  it('run the same statements, to the same result and the same rows, on a synchronous and an asynchronous driver', async () => {
    const [syncDb, asyncDb] = [database(), database()]
    const store = asyncStore(asyncDb)
    await seed(store)
    for (const row of asyncDb
      .prepare('SELECT id, task_name, status, idempotency_key, finished_seq, record FROM svc_runs ORDER BY seq')
      .all())
      syncDb.prepare(INSERT_RUN).run(...(Object.values(row) as SqlValue[]))

    const before = store.driver.statements
    const pending = runProcedureAsync(startQueuedSql('report', limits, now), store.driver)
    // Nothing is answered in the turn the procedure starts in: each statement waits for its own.
    expect(store.driver.statements).toBe(before)
    const viaAsync = await pending
    const viaSync = runProcedure(startQueuedSql('report', limits, now), syncDriver(syncDb))
    expect(viaAsync).toEqual(viaSync)
    expect(viaAsync.result.started.map((run) => run.id)).toEqual(['q0', 'q2'])
    // Three starts in the window: the next place frees when the run started at 00:09:30 leaves it.
    expect(viaAsync.result.wake).toEqual({ at: '2025-01-01T00:10:30.000Z', runId: 'q3' })
    // Two reads (the queued and running runs, the runs started in the window) and one write per start.
    expect(store.driver.statements - before).toBe(4)
    const rows = (db: DatabaseSync) => db.prepare('SELECT id, status, finished_seq, record FROM svc_runs ORDER BY seq').all()
    expect(rows(asyncDb)).toEqual(rows(syncDb))
  })

  it('hand a statement that fails to the procedure, which may catch it, on either driver', async () => {
    function* insertTwice(): SqlProcedure<string> {
      const run = makeRun()
      yield write(INSERT_RUN, ...insertRunValues(run, null, rowText(run)))
      try {
        yield write(INSERT_RUN, ...insertRunValues(run, null, rowText(run)))
        return 'inserted twice'
      } catch (error) {
        return (error as Error).message
      }
    }
    const [one, two] = [database(), database()]
    expect(runProcedure(insertTwice(), syncDriver(one))).toMatch(/UNIQUE constraint failed: svc_runs.id/)
    expect(await runProcedureAsync(insertTwice(), asyncDriver(two))).toMatch(/UNIQUE constraint failed: svc_runs.id/)
    // Uncaught, it reaches the caller, whose transaction takes back what the procedure wrote.
    const store = asyncStore(database())
    const queued = [makeRun({ status: 'queued' }), makeRun({ status: 'queued' })]
    for (const run of queued) await store.createRun(run)
    const run = store.driver.run
    let updates = 0
    store.driver.run = async (query, params) => {
      if (query === UPDATE_RUN && ++updates === 2) throw new Error('the disk failed')
      return run(query, params)
    }
    await expect(store.startQueued('report', { concurrency: { limit: 2 } }, now)).rejects.toThrow('the disk failed')
    store.driver.run = run
    expect((await store.listRuns({ status: 'queued' })).map((r) => r.id).sort()).toEqual(queued.map((r) => r.id).sort())
  })
})

describe('the migration chain', () => {
  const schemaOf = (db: DatabaseSync) =>
    db.prepare("SELECT type, name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY name").all()

  it("makes the same tables on an asynchronous driver, in the store's own transaction, as on a synchronous one", async () => {
    for (const host of ['file', 'durable-object'] as const) {
      const [syncDb, asyncDb] = [new DatabaseSync(':memory:'), new DatabaseSync(':memory:')]
      open.push(syncDb, asyncDb)
      migrateSchema(fileDriver(syncDb), host, 'the synchronous database')
      const driver = asyncDriver(asyncDb)
      asyncDb.exec('BEGIN IMMEDIATE')
      await runProcedureAsync(migrationSteps(host, 'the asynchronous database'), driver)
      asyncDb.exec('COMMIT')
      expect(schemaOf(asyncDb), host).toEqual(schemaOf(syncDb))
      expect(driver.statements, host).toBeGreaterThan(10)
      // Run again, it finds the version recorded and changes nothing.
      const before = driver.statements
      await runProcedureAsync(migrationSteps(host, 'the asynchronous database'), driver)
      expect(schemaOf(asyncDb), host).toEqual(schemaOf(syncDb))
      expect(driver.statements - before, host).toBeLessThanOrEqual(2)
    }
  })
})
