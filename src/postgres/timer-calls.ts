/**
 * How `PostgresRunStore` keeps timers (`saveTimer`, `takeTimer`,
 * `dropTimersOf`, `listTimers`): a save is a row of the statement of
 * timer-saves.ts, and the saves made while one is in flight go together
 * (group-commit.ts), each answered once they committed. A timer an
 * attempt sets for itself (a retry, a sleep, a token's timeout) is fenced
 * by that attempt's lease.
 */
import { LeaseLostError } from '../runtime/errors.ts'
import { ATTEMPT_TIMERS } from '../runtime/tasks/engine/fenced-writes.ts'
import type { TimerRecord } from '../runtime/tasks/store/store.ts'
import type { PostgresConnection } from './connection.ts'
import { GroupCommit } from './group-commit.ts'
import { SAVE_BATCH, savedEach } from './step-writes.ts'
import { saveTimersPg, type TimerSave } from './timer-saves.ts'

type Row<T> = { record: T }

export class TimerCalls {
  readonly #conn: PostgresConnection
  /** Timers of delayed runs, sleeps and retries: under load, many go together. */
  readonly #timers = new GroupCommit<TimerSave, boolean>(
    (saves) => savedEach(this.#conn, saves, (sql, batch) => saveTimersPg(sql, this.#conn.schema, batch)),
    { key: (save) => save.timer.id, max: SAVE_BATCH },
  )

  constructor(conn: PostgresConnection) {
    this.#conn = conn
  }

  /** A timer of an attempt under a lease held here whose fence moved on rejects with `LeaseLostError`. */
  async saveTimer(timer: TimerRecord): Promise<void> {
    const fence = ATTEMPT_TIMERS.has(timer.kind) ? this.#conn.fences.of(timer.runId) : undefined
    if (!(await this.#timers.add({ timer, fence }))) throw new LeaseLostError(timer.runId)
  }

  takeTimer(id: string): Promise<TimerRecord | undefined> {
    const conn = this.#conn
    return conn.run(async (sql) => {
      // The DELETE is the claim: of two callers, only the one whose statement
      // deleted the row gets it back (the other waits on the row lock, then
      // finds it gone).
      const [row] = await sql<Row<TimerRecord>[]>`DELETE FROM ${sql(conn.schema)}.timers WHERE id = ${id} RETURNING record`
      return row?.record
    })
  }

  dropTimersOf(runId: string): Promise<string[]> {
    const conn = this.#conn
    return conn.run(async (sql) => {
      const rows = await sql<{ id: string }[]>`DELETE FROM ${sql(conn.schema)}.timers WHERE run_id = ${runId} RETURNING id`
      return rows.map((row) => row.id)
    })
  }

  listTimers(): Promise<TimerRecord[]> {
    const conn = this.#conn
    return conn.run(async (sql) => {
      const rows = await sql<Row<TimerRecord>[]>`SELECT record FROM ${sql(conn.schema)}.timers ORDER BY seq`
      return rows.map((row) => row.record)
    })
  }
}
