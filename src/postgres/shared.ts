/**
 * `SharedWork` on Postgres: how processes on one database split due timers,
 * running attempts and cron ticks, and hear of each other's run changes
 * (changes.ts). Each claim is one statement. Rows that
 * another process is claiming right now are skipped (`FOR UPDATE SKIP
 * LOCKED`), not waited for, so a sweep never queues behind another; the
 * claim columns (`claimed_by`, `claim_expires_at`, `lease_owner`,
 * `lease_expires_at`) make a claim outlive its statement, until its owner
 * finishes or it lapses. Lease times come from the database's clock, so
 * processes on machines whose clocks differ still agree on when one lapsed.
 *
 * A run that becomes `running` (`updateRun`) gets a lease with no owner
 * that lasts `leaseMs`: whichever process dispatches it takes it
 * (`acquireLease`), while the sweeps of the others leave it alone, so the
 * process that resumed a run is the one that runs it, unless it dies
 * first. A run triggered `running` is inserted with its lease held by the
 * engine that triggered it (`leasesOnCreate`), which runs it at once: the
 * trigger's one commit is all that stands between it and its start. A
 * lease given up (`releaseLeases`) has no expiry: the attempt is anyone's
 * at once.
 *
 * Leases are fenced (fences.ts): every claim moves the run's `lease_fence`
 * on and this process keeps the fence its own claims got, which the writes
 * of its attempts then check in their statements. A process that stalls
 * past `leaseMs` keeps running its attempt until it next renews or writes;
 * by then another may have taken the run over, and none of the stalled
 * attempt's writes lands. The check is a condition of the write's own
 * statement: it costs no round trip.
 *
 * A process never takes as an orphan a run it holds itself: its own
 * dispatch of it is still in flight, and either its lease is still good
 * (nobody claimed the run, so renewing it works however late) or its next
 * write finds out that it is not.
 */
import type { Sql } from 'postgres'
import type { LiveVersions, SharedWork, TimerRecord } from '../runtime/tasks/store/store.ts'
import type { RunChange, RunRecord } from '../types.ts'
import { PostgresChanges } from './changes.ts'
import type { Fences } from './fences.ts'
import { GroupCommit } from './group-commit.ts'
import { notifyChannel } from './migrations.ts'
import { wholeRecord } from './records.ts'

type Row<T> = { record: T }

export interface PostgresSharedWorkOptions {
  schema: string
  leaseMs: number
  pollMs: number
  /** The fences of the leases this process holds, which the store's writes check. */
  fences: Fences
  /** Runs a query once the schema is ready (the store's own way in). */
  run<T>(query: (sql: Sql) => Promise<T>): Promise<T>
}

interface Lease {
  owner: string
  runId: string
}

/** The run ids of each owner. */
function byOwner(leases: Lease[]): Map<string, string[]> {
  const owners = new Map<string, string[]>()
  for (const { owner, runId } of leases) {
    const ids = owners.get(owner)
    if (ids) ids.push(runId)
    else owners.set(owner, [runId])
  }
  return owners
}

export class PostgresSharedWork implements SharedWork {
  readonly leaseMs: number
  readonly pollMs: number
  readonly leasesOnCreate = true
  readonly #schema: string
  readonly #run: PostgresSharedWorkOptions['run']
  readonly #fences: Fences
  // Every resumed run takes its lease: under load, many go together.
  readonly #acquire = new GroupCommit<Lease, boolean>((leases) => this.#acquireMany(leases))
  /** Run changes between the processes (changes.ts). */
  readonly #changes: PostgresChanges

  constructor(options: PostgresSharedWorkOptions) {
    this.#schema = options.schema
    this.leaseMs = options.leaseMs
    this.pollMs = options.pollMs
    this.#run = options.run
    this.#fences = options.fences
    this.#changes = new PostgresChanges({ schema: options.schema, run: options.run })
  }

  claimDueTimers(owner: string, now: string, limit: number): Promise<TimerRecord[]> {
    return this.#run(async (sql) => {
      const timers = sql(this.#schema)
      const rows = await sql<(Row<TimerRecord> & { due_at: Date })[]>`
        UPDATE ${timers}.timers SET claimed_by = ${owner}, claim_expires_at = now() + ${this.leaseMs} * interval '1 millisecond'
        WHERE id IN (
          SELECT id FROM ${timers}.timers
          WHERE due_at <= ${now}::timestamptz AND (claim_expires_at IS NULL OR claim_expires_at < now())
          ORDER BY due_at LIMIT ${limit}
          FOR UPDATE SKIP LOCKED
        )
        RETURNING record, due_at`
      return rows.sort((a, b) => a.due_at.getTime() - b.due_at.getTime()).map((row) => row.record)
    })
  }

  claimTimer(owner: string, id: string): Promise<TimerRecord | undefined> {
    return this.#run(async (sql) => {
      const [row] = await sql<Row<TimerRecord>[]>`
        UPDATE ${sql(this.#schema)}.timers SET claimed_by = ${owner}, claim_expires_at = now() + ${this.leaseMs} * interval '1 millisecond'
        WHERE id = ${id} AND (claim_expires_at IS NULL OR claim_expires_at < now())
        RETURNING record`
      return row?.record
    })
  }

  finishTimer(owner: string, id: string): Promise<void> {
    return this.#run(async (sql) => {
      // saveTimer clears the claim, so a timer saved again while its owner
      // acted on the old one (the next retry of the same run) is kept.
      await sql`DELETE FROM ${sql(this.#schema)}.timers WHERE id = ${id} AND claimed_by = ${owner}`
    })
  }

  nextDueAt(): Promise<string | undefined> {
    return this.#run(async (sql) => {
      const [row] = await sql<{ due_at: Date }[]>`
        SELECT due_at FROM ${sql(this.#schema)}.timers
        WHERE claim_expires_at IS NULL OR claim_expires_at < now()
        ORDER BY due_at LIMIT 1`
      return row?.due_at.toISOString()
    })
  }

  acquireLease(owner: string, runId: string): Promise<boolean> {
    const taken = this.#fences.acquiring(owner, runId)
    return this.#acquire.add({ owner, runId }).finally(taken)
  }

  /**
   * One statement per owner for a batch of `acquireLease` calls, its rows
   * locked in id order. Other batches lock theirs in the order of their
   * calls; a deadlock between two is run again (`PostgresConnection.run`, connection.ts).
   */
  #acquireMany(leases: Lease[]): Promise<boolean[]> {
    return this.#run(async (sql) => {
      const runs = sql(this.#schema)
      const held = new Set<string>()
      for (const [owner, ids] of byOwner(leases)) {
        const rows = await sql<{ id: string; fence: string }[]>`
          UPDATE ${runs}.runs SET lease_owner = ${owner}, lease_expires_at = now() + ${this.leaseMs} * interval '1 millisecond',
            lease_fence = lease_fence + 1
          WHERE id IN (
            SELECT id FROM ${runs}.runs
            WHERE id = ANY(${ids}::text[]) AND status = 'running'
              AND (lease_owner IS NULL OR lease_owner = ${owner} OR lease_expires_at < now())
            ORDER BY id FOR UPDATE
          )
          RETURNING id, lease_fence::text AS fence`
        for (const row of rows) {
          held.add(`${owner}\n${row.id}`)
          this.#fences.claimed(owner, row.id, row.fence)
        }
      }
      return leases.map((lease) => {
        if (held.has(`${lease.owner}\n${lease.runId}`)) return true
        // Another process holds it: a fence kept here from an earlier claim is void.
        this.#fences.released(lease.owner, [lease.runId])
        return false
      })
    })
  }

  /**
   * Renews the leases still held. A run whose attempt's end gave its lease
   * up while the renewal waited for the end's commit (run-updates.ts) is
   * answered as held: its attempt is over, and nothing of it is to stop.
   */
  renewLeases(owner: string, runIds: readonly string[]): Promise<string[]> {
    if (runIds.length === 0) return Promise.resolve([])
    return this.#run(async (sql) => {
      const rows = await sql<{ id: string }[]>`
        UPDATE ${sql(this.#schema)}.runs SET lease_expires_at = now() + ${this.leaseMs} * interval '1 millisecond'
        WHERE id = ANY(${runIds as string[]}::text[]) AND lease_owner = ${owner} AND status <> 'cancelled'
        RETURNING id`
      const renewed = new Set(rows.map((row) => row.id))
      return runIds.filter((id) => renewed.has(id) || this.#fences.endedHere(id))
    })
  }

  releaseLeases(owner: string, runIds?: readonly string[], keep: readonly string[] = []): Promise<void> {
    // Forgotten first: once the attempt is over, what this process writes
    // for the run is not the attempt's, even should the release fail. A
    // run whose end gave its lease up already (run-updates.ts) needs no
    // statement.
    const left = this.#fences.released(owner, runIds)
    if (left?.length === 0) return Promise.resolve()
    return this.#run(async (sql) => {
      const schema = sql(this.#schema)
      if (left !== undefined) {
        await sql`
          UPDATE ${schema}.runs SET lease_owner = NULL, lease_expires_at = NULL
          WHERE lease_owner = ${owner} AND id = ANY(${left}::text[])`
        return
      }
      // Letting go of everything (the process shuts down): timers it claimed
      // and did not finish go back too.
      await sql`
        WITH timers AS (
          UPDATE ${schema}.timers SET claimed_by = NULL, claim_expires_at = NULL WHERE claimed_by = ${owner}
        )
        UPDATE ${schema}.runs SET lease_owner = NULL, lease_expires_at = NULL
        WHERE lease_owner = ${owner} AND id <> ALL(${keep as string[]}::text[])`
    })
  }

  claimOrphanedRuns(owner: string, limit: number, skip: readonly string[] = []): Promise<RunRecord[]> {
    return this.#run(async (sql) => {
      const runs = sql(this.#schema)
      const held = this.#fences.runIds(owner)
      // A running run with a retry timer is between attempts: the timer's
      // claimer starts the next one. A suspended run whose lease lapsed lost
      // its process between suspending and arming its waitpoint (the lease
      // is given up after both). A suspended run that waits for a child
      // which has finished was not resumed by the child's process: it waits
      // for a run it reached through an idempotency key, whose process
      // only resumes the run that started it. Running runs this process
      // holds are its own dispatch's (see above); a suspended one whose
      // lease lapsed here is not: arming its wait failed, and is tried
      // again (arming twice arms one wait).
      const rows = await sql<{ id: string; fence: string }[]>`
        UPDATE ${runs}.runs SET lease_owner = ${owner}, lease_expires_at = now() + ${this.leaseMs} * interval '1 millisecond',
          lease_fence = lease_fence + 1
        WHERE id IN (
          SELECT r.id FROM ${runs}.runs r
          WHERE (r.id <> ALL(${held}::text[]) OR r.status = 'suspended') AND (
            (r.status = 'running' AND (r.lease_expires_at IS NULL OR r.lease_expires_at < now())
              AND NOT EXISTS (SELECT 1 FROM ${runs}.timers t WHERE t.run_id = r.id AND t.kind = 'retry'))
            OR (r.status = 'suspended' AND r.lease_owner IS NOT NULL AND r.lease_expires_at < now())
            OR (r.status = 'suspended' AND (r.lease_expires_at IS NULL OR r.lease_expires_at < now())
              AND r.record #>> '{suspended,waitpoint,type}' = 'task'
              AND EXISTS (
                SELECT 1 FROM ${runs}.runs c
                WHERE c.id = r.record #>> '{suspended,waitpoint,runId}' AND c.finished_seq IS NOT NULL
              ))
          )
          AND (r.record->>'version' IS NULL OR r.task_name || '@' || (r.record->>'version') <> ALL(${skip as string[]}::text[]))
          ORDER BY r.seq LIMIT ${limit}
          FOR UPDATE OF r SKIP LOCKED
        )
        RETURNING id, lease_fence::text AS fence`
      if (rows.length === 0) return []
      for (const row of rows) this.#fences.claimed(owner, row.id, row.fence)
      // Read in a statement of its own, not in RETURNING: the claim's
      // snapshot was taken when it began, and the process that held the run
      // may have committed a step between then and the moment the claim
      // locked the row (it held the row only until that commit). A snapshot
      // taken now sees that step, and no later one can land: the fence moved.
      const claimed = await sql<Row<RunRecord>[]>`
        SELECT ${wholeRecord(sql, this.#schema)} AS record FROM ${runs}.runs
        WHERE id = ANY(${rows.map((row) => row.id)}::text[]) ORDER BY seq`
      return claimed.map((row) => row.record)
    })
  }

  register(owner: string, versions: readonly string[]): Promise<void> {
    return this.#run(async (sql) => {
      const schema = sql(this.#schema)
      // Sorted, so that two processes of one release hold equal arrays.
      const served = [...versions].sort()
      // Rows of processes gone for an hour go as others register. A process
      // that serves the same versions as one registered before it, live or
      // gone within the hour, takes that one's start: a version is as old
      // as its first process, so an old release's process restarted during
      // a rollout does not pass for the newest (versions.ts orders by it).
      await sql`
        WITH pruned AS (DELETE FROM ${schema}.processes WHERE beat_at < now() - interval '1 hour')
        INSERT INTO ${schema}.processes (owner, versions, started_at)
        VALUES (${owner}, ${served}::text[], coalesce((SELECT min(started_at) FROM ${schema}.processes WHERE versions = ${served}::text[]), clock_timestamp()))
        ON CONFLICT (owner) DO UPDATE SET versions = excluded.versions, beat_at = now()`
    })
  }

  unregister(owner: string): Promise<void> {
    return this.#run(async (sql) => {
      // Gone at once (its beat put past the lease); the row stays for the hour, with its start.
      await sql`
        UPDATE ${sql(this.#schema)}.processes SET beat_at = now() - ${this.leaseMs + 1} * interval '1 millisecond'
        WHERE owner = ${owner}`
    })
  }

  liveVersions(): Promise<LiveVersions[]> {
    return this.#run(async (sql) => {
      const rows = await sql<LiveVersions[]>`
        SELECT owner, versions FROM ${sql(this.#schema)}.processes
        WHERE beat_at >= now() - ${this.leaseMs} * interval '1 millisecond'
        ORDER BY started_at DESC, owner`
      return rows.map((row) => ({ owner: row.owner, versions: row.versions }))
    })
  }

  claimTick(taskName: string, tick: string): Promise<boolean> {
    return this.#run(async (sql) => {
      const ticks = sql(this.#schema)
      // Ticks older than a day can no longer be contested; they go as new ones come.
      const rows = await sql`
        WITH pruned AS (
          DELETE FROM ${ticks}.cron_ticks WHERE task_name = ${taskName} AND tick < ${tick}::timestamptz - interval '1 day'
        )
        INSERT INTO ${ticks}.cron_ticks (task_name, tick) VALUES (${taskName}, ${tick}::timestamptz)
        ON CONFLICT DO NOTHING
        RETURNING 1`
      return rows.length > 0
    })
  }

  wake(): Promise<void> {
    return this.#run(async (sql) => {
      await sql.notify(notifyChannel(this.#schema), '')
    })
  }

  subscribe(onWake: () => void): Promise<() => Promise<void>> {
    return this.#run(async (sql) => {
      const { unlisten } = await sql.listen(notifyChannel(this.#schema), () => onWake())
      return unlisten
    })
  }

  publishChanges(owner: string, changes: readonly RunChange[]): Promise<void> {
    return this.#changes.publish(owner, changes)
  }

  onChanges(owner: string, listener: (changes: RunChange[]) => void): Promise<() => Promise<void>> {
    return this.#changes.listen(owner, listener)
  }

  /** Sends the changes still waiting to be published, and stops renewing this process's listeners; the store calls it before it closes its connections. */
  closeChanges(): Promise<void> {
    return this.#changes.close()
  }
}
