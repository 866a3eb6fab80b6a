/**
 * The floor under a durable run on `SqliteRunStore`: the statements the
 * store runs for `count` runs in flight at once, and the commits they wait
 * for, issued straight through `node:sqlite` on a file opened exactly as the
 * store opens it (WAL, `synchronous = FULL`, the same schema), with nothing
 * else around them. Runs in flight at once move in step, so every run's
 * first write shares one transaction, every run's second write the next,
 * and so on, as group commit batches them. What svc spends above this is
 * the engine and the store's own work.
 *
 * With `perCommit`, runs go through in groups of that many, each group
 * created, stepped and ended before the next begins, every write of a group
 * in one transaction: a commit per `perCommit` runs, as an app that writes
 * its own jobs in batches of that size would.
 */
import { join } from 'node:path'
import { openDatabase } from '../src/sqlite/database.ts'
import { UPDATE_RUN_FENCED, UPSERT_STEP_FENCED } from '../src/sqlite/fences.ts'
import { INSERT_RUN_OWNED } from '../src/sqlite/owners.ts'
import { newRunId } from '../src/runtime/tasks/base/ids.ts'
import { insertRunValues } from '../src/runtime/tasks/sql/queries.ts'
import type { RunRecord } from '../src/types.ts'

/** Milliseconds for `count` runs of `steps` recorded steps each: created running, each step saved, ended. */
export function sqliteFloor(dir: string, name: string, count: number, steps: number, perCommit = count): number {
  const db = openDatabase(join(dir, `${name}.db`), 5000, 'bench')
  try {
    // The statements the store runs, with the owner it records
    // (sqlite/owners.ts) and the fence its attempt's writes check (sqlite/fences.ts).
    const owner = 2 ** 52 + 1
    const insert = db.prepare(INSERT_RUN_OWNED)
    const update = db.prepare(UPDATE_RUN_FENCED)
    const saveStep = db.prepare(UPSERT_STEP_FENCED)
    // Every run's write of one kind, in one transaction, or in the group's when there are groups.
    let from = 0
    let to = count
    let grouped = false
    const batch = (write: (i: number) => void) => {
      if (!grouped) db.exec('BEGIN IMMEDIATE')
      for (let i = from; i < to; i++) write(i)
      if (!grouped) db.exec('COMMIT')
    }
    const start = performance.now()
    const now = new Date().toISOString()
    const runs = Array.from({ length: count }, () => ({
      id: newRunId(),
      taskName: 'noop',
      status: 'running',
      trigger: 'manual',
      ok: true,
      attempts: [] as unknown[],
      steps: {} as Record<string, unknown>,
      createdAt: now,
      startedAt: now,
    }))
    const seqs: number[] = []
    const all = () => {
      batch((i) => {
        // The columns the store writes, from the function that lists them.
        const values = insertRunValues(runs[i] as unknown as RunRecord, null, JSON.stringify(runs[i]))
        seqs[i] = Number(insert.run(...values, owner, 1).lastInsertRowid)
      })
      for (let step = 0; step < steps; step++) {
        // A step is a row of its own; the run's row keeps `"steps":{}`.
        batch((i) => {
          const key = `s${step}`
          saveStep.run(key, JSON.stringify({ status: 'completed', output: step }), seqs[i], owner, 1, key)
        })
      }
      batch((i) => {
        const run = runs[i]
        Object.assign(run, { status: 'completed', finishedAt: now })
        run.attempts.push({ index: 1, startedAt: now, durationMs: 0 })
        update.run('completed', i + 1, JSON.stringify(run), seqs[i], owner, 1)
      })
    }
    if (perCommit >= count) all()
    else {
      grouped = true
      for (from = 0; from < count; from = to) {
        to = Math.min(count, from + perCommit)
        db.exec('BEGIN IMMEDIATE')
        all()
        db.exec('COMMIT')
      }
    }
    return performance.now() - start
  } finally {
    db.close()
  }
}
