/**
 * `SharedWork` on a SQLite file: how processes on one machine split due
 * timers, running attempts and cron ticks through one `SqliteRunStore`
 * file opened with `shared: true`, as processes on one Postgres database do
 * (docs/stores.md "Several processes on one SQLite file"). The SQL is in
 * leases.ts.
 *
 * A lease is fenced with the run's `owner` and `owner_fence`, the columns
 * that fence the writes of an attempt on any shared file
 * (fences.ts): a claim of a run makes this store its owner under the
 * next fence, which the store keeps until the lease is given up, so the
 * writes of an attempt whose run another process took over land nowhere.
 *
 * SQLite has no LISTEN/NOTIFY: `wake()` counts up a row, and a store with
 * subscribers reads it every `WAKE_POLL_MS`, which costs one read of one
 * row of a page that stays in memory. Run changes between the processes
 * go through a table in the same way (changes.ts).
 */
import type { StatementSync } from 'node:sqlite'
import type { LiveVersions, SharedWork, TimerRecord } from '../runtime/tasks/store/store.ts'
import type { RunChange, RunRecord } from '../types.ts'
import { SqliteChangeLog } from './changes.ts'
import {
  ACQUIRE_LEASE,
  CLAIM_DUE_TIMERS,
  CLAIM_ORPHANED_RUNS,
  CLAIM_TICK,
  CLAIM_TIMER,
  FINISH_TIMER,
  LIVE_PROCESSES,
  NEXT_DUE_AT,
  PRUNE_PROCESSES,
  PRUNE_TICKS,
  REGISTER_PROCESS,
  RELEASE_ALL_LEASES,
  RELEASE_LEASES,
  RELEASE_TIMER_CLAIMS,
  RENEW_LEASES,
  UNREGISTER_PROCESS,
  WAKE,
  WAKES,
} from './leases.ts'

/** How often a store with subscribers looks for a `wake()` of any process. */
export const WAKE_POLL_MS = 25
const DAY_MS = 24 * 60 * 60 * 1000
const HOUR_MS = 60 * 60 * 1000

/** What the shared work needs of its store. */
export interface SqliteSharedHost {
  /** Runs `fn` inside the store's write batch (the file's write lock); resolves once committed. */
  write<T>(fn: () => T): Promise<T>
  /** Runs `fn` on committed state, once no write batch is open. */
  read<T>(fn: () => T): Promise<T>
  sql(text: string): StatementSync
  /** This store's id in the `owners` table: the `owner` of the runs it holds. */
  readonly owner: number
  /** The fences of the runs this store holds, by run id (the store's own map). */
  readonly fences: Map<string, number>
  /** Run `id` as the file holds it now, inside a write. */
  run(id: string): RunRecord | undefined
}

export interface SqliteSharedWorkOptions {
  leaseMs: number
  pollMs: number
}

export class SqliteSharedWork implements SharedWork {
  readonly leaseMs: number
  readonly pollMs: number
  readonly leasesOnCreate = true
  readonly #host: SqliteSharedHost
  readonly #subscribers = new Set<() => void>()
  #poll: ReturnType<typeof setInterval> | undefined
  /** The count of wake-ups last seen, read before the first subscription resolves. */
  #wakes: number | undefined
  #baseline: Promise<unknown> | undefined
  /** Run changes between the processes on the file. */
  readonly #changes: SqliteChangeLog

  constructor(host: SqliteSharedHost, options: SqliteSharedWorkOptions) {
    this.#host = host
    this.leaseMs = options.leaseMs
    this.pollMs = options.pollMs
    this.#changes = new SqliteChangeLog(host)
  }

  claimDueTimers(owner: string, now: string, limit: number): Promise<TimerRecord[]> {
    return this.#host.write(() => {
      const at = Date.now()
      const rows = this.#host.sql(CLAIM_DUE_TIMERS).all(owner, at + this.leaseMs, at, now, limit) as { record: string; due_at: string }[]
      rows.sort((a, b) => (a.due_at < b.due_at ? -1 : a.due_at > b.due_at ? 1 : 0))
      return rows.map((row) => JSON.parse(row.record) as TimerRecord)
    })
  }

  claimTimer(owner: string, id: string): Promise<TimerRecord | undefined> {
    return this.#host.write(() => {
      const at = Date.now()
      const [row] = this.#host.sql(CLAIM_TIMER).all(owner, at + this.leaseMs, at, id) as { record: string }[]
      return row && (JSON.parse(row.record) as TimerRecord)
    })
  }

  finishTimer(owner: string, id: string): Promise<void> {
    return this.#host.write(() => {
      this.#host.sql(FINISH_TIMER).run(id, owner)
    })
  }

  nextDueAt(): Promise<string | undefined> {
    return this.#host.read(() => (this.#host.sql(NEXT_DUE_AT).get(Date.now()) as { due_at: string } | undefined)?.due_at)
  }

  acquireLease(owner: string, runId: string): Promise<boolean> {
    const host = this.#host
    return host.write(() => {
      const at = Date.now()
      const row = host.sql(ACQUIRE_LEASE).get(owner, at + this.leaseMs, at, host.owner, runId) as { owner_fence: number } | undefined
      // Another process holds it: a fence kept here from an earlier claim is void.
      if (row) host.fences.set(runId, row.owner_fence)
      else host.fences.delete(runId)
      return row !== undefined
    })
  }

  renewLeases(owner: string, runIds: readonly string[]): Promise<string[]> {
    if (runIds.length === 0) return Promise.resolve([])
    return this.#host.write(() => {
      const rows = this.#host.sql(RENEW_LEASES).all(owner, Date.now() + this.leaseMs, JSON.stringify(runIds)) as { id: string }[]
      return rows.map((row) => row.id)
    })
  }

  releaseLeases(owner: string, runIds?: readonly string[], keep: readonly string[] = []): Promise<void> {
    const host = this.#host
    // Forgotten first: once the attempt is over, what this process writes
    // for the run is not the attempt's, even should the release fail. One
    // store serves one engine, so every run held here is that owner's.
    if (runIds === undefined) host.fences.clear()
    else for (const id of runIds) host.fences.delete(id)
    return host.write(() => {
      if (runIds !== undefined) {
        host.sql(RELEASE_LEASES).run(owner, JSON.stringify(runIds))
        return
      }
      // Letting go of everything (the process shuts down): the timers it claimed and did not finish go back too.
      host.sql(RELEASE_ALL_LEASES).run(owner, JSON.stringify(keep))
      host.sql(RELEASE_TIMER_CLAIMS).run(owner)
    })
  }

  claimOrphanedRuns(owner: string, limit: number, skip: readonly string[] = []): Promise<RunRecord[]> {
    const host = this.#host
    return host.write(() => {
      const at = Date.now()
      const rows = host.sql(CLAIM_ORPHANED_RUNS).all(owner, at + this.leaseMs, at, host.owner, limit, JSON.stringify(skip)) as {
        id: string
        owner_fence: number
      }[]
      const runs: RunRecord[] = []
      for (const row of rows) {
        host.fences.set(row.id, row.owner_fence)
        const run = host.run(row.id)
        if (run) runs.push(run)
      }
      return runs
    })
  }

  register(owner: string, versions: readonly string[]): Promise<void> {
    return this.#host.write(() => {
      const at = Date.now()
      this.#host.sql(PRUNE_PROCESSES).run(at - HOUR_MS)
      // Sorted, so that two processes of one release write the same text (REGISTER_PROCESS compares it).
      this.#host.sql(REGISTER_PROCESS).run(owner, JSON.stringify([...versions].sort()), at)
    })
  }

  unregister(owner: string): Promise<void> {
    return this.#host.write(() => {
      this.#host.sql(UNREGISTER_PROCESS).run(owner, Date.now() - this.leaseMs - 1)
    })
  }

  liveVersions(): Promise<LiveVersions[]> {
    return this.#host.read(() =>
      (this.#host.sql(LIVE_PROCESSES).all(Date.now() - this.leaseMs) as { owner: string; versions: string }[]).map((row) => ({
        owner: row.owner,
        versions: JSON.parse(row.versions) as string[],
      })),
    )
  }

  claimTick(taskName: string, tick: string): Promise<boolean> {
    const host = this.#host
    return host.write(() => {
      host.sql(PRUNE_TICKS).run(taskName, new Date(Date.parse(tick) - DAY_MS).toISOString())
      return host.sql(CLAIM_TICK).run(taskName, tick).changes > 0
    })
  }

  wake(): Promise<void> {
    return this.#host.write(() => {
      this.#host.sql(WAKE).run()
    })
  }

  async subscribe(onWake: () => void): Promise<() => Promise<void>> {
    this.#subscribers.add(onWake)
    if (this.#poll === undefined) {
      this.#wakes = undefined
      this.#baseline = this.#readWakes().then((n) => {
        this.#wakes ??= n
      })
      // Unref'd: listening for wake-ups never keeps the process alive.
      this.#poll = setInterval(() => this.#check(), WAKE_POLL_MS)
      this.#poll.unref?.()
    }
    // A wake-up after this resolves is one this subscriber hears.
    await this.#baseline
    return async () => {
      this.#subscribers.delete(onWake)
      if (this.#subscribers.size === 0) this.stop()
    }
  }

  publishChanges(owner: string, changes: readonly RunChange[]): Promise<void> {
    return this.#changes.publish(owner, changes)
  }

  onChanges(owner: string, listener: (changes: RunChange[]) => void): Promise<() => Promise<void>> {
    return this.#changes.listen(owner, listener)
  }

  /** The store's commit hook, right before each batch's COMMIT: the changes published since become rows of it. */
  beforeCommit(): void {
    this.#changes.beforeCommit()
  }

  /** The store's end hook, when a batch has ended, committed (`ok`) or not. */
  batchEnded(ok: boolean): void {
    this.#changes.batchEnded(ok)
  }

  /**
   * Stops listening for wake-ups and changes (the store closes); the
   * changes still waiting go into a last batch, which the store commits
   * right after.
   */
  stop(): void {
    clearInterval(this.#poll)
    this.#poll = undefined
    this.#changes.stop()
  }

  #readWakes(): Promise<number> {
    return this.#host.read(() => Number((this.#host.sql(WAKES).get() as { n: number }).n))
  }

  #check(): void {
    this.#readWakes().then(
      (n) => {
        if (this.#wakes === undefined || n === this.#wakes) return
        this.#wakes = n
        for (const onWake of this.#subscribers) onWake()
      },
      () => {
        // The file cannot be read now (closed, or failing): the sweeps, every pollMs, still find the work.
      },
    )
  }
}
