/**
 * Run changes between the processes on one SQLite file opened with
 * `shared: true` (`SharedWork.publishChanges` and `onChanges`). SQLite has
 * no notifications, so the changes go through a table, `changes`, that
 * the processes with listeners read every `CHANGE_POLL_MS`, as they read
 * the wake-up counter (shared-work.ts).
 *
 * Publishing writes nothing while no other store on the file listens: a
 * store with listeners holds a row of `change_listeners`, renewed while it
 * listens and gone once it stops (or lapsed, `LISTENER_TTL_MS` after a
 * crash), and a batch with changes to publish looks for one first, a read
 * of a table of a few rows under the write lock it holds. Measured, rows
 * written with every commit cost shared SQLite about 15% of its runs per
 * second even with nobody reading them; the look costs nothing that shows.
 *
 * When someone listens, publishing still writes nothing of its own while
 * the store writes anyway: the changes published since the last commit
 * become rows of the next batch the store commits (group-commit.ts),
 * right before its COMMIT, so they cost one insert per batch, not a
 * transaction and an fsync. Only when no batch comes within `FALLBACK_MS`
 * does the log open one for them.
 *
 * The table is a ring: each row holds up to `CHANGES_PER_ROW` changes of
 * one process, and each insert prunes at most `PRUNE_BATCH` of the oldest
 * rows, those past the newest `KEEP_ROWS` or older than `KEEP_MS`. A
 * listener that falls further behind than that (its event loop stalled)
 * misses the changes pruned meanwhile. `seq` is AUTOINCREMENT, so it never
 * goes back, even once every row was pruned.
 */
import type { StatementSync } from 'node:sqlite'
import type { RunChange } from '../types.ts'

/** How often a store with listeners reads the changes of the other processes. */
export const CHANGE_POLL_MS = 25
/** How long a change waits for a batch of the store's own before the log opens one. */
export const FALLBACK_MS = 10
/** The rows a table keeps at least, newest first, unless older than `KEEP_MS`. */
export const KEEP_ROWS = 1000
export const KEEP_MS = 60_000
/** The oldest rows one insert removes at most. */
export const PRUNE_BATCH = 100
export const CHANGES_PER_ROW = 100
/** The rows one read takes; the next read takes the rest. */
const READ_LIMIT = 500
/** How long a store's row in `change_listeners` lasts unless renewed, and how often a store with listeners renews it. */
export const LISTENER_TTL_MS = 30_000
const LISTENER_RENEW_MS = 10_000

// The two tables (schema version 8) are made by the migration chain
// (src/runtime/tasks/sql/file-tables.ts), which says what their columns hold.

const INSERT_CHANGES = 'INSERT INTO svc_changes (owner, at, payload) VALUES (?, ?, ?) RETURNING seq'
// Looks at the oldest PRUNE_BATCH rows only, so a prune reads no more than it may remove.
const PRUNE_CHANGES = `DELETE FROM svc_changes WHERE seq IN (
  SELECT seq FROM (SELECT seq, at FROM svc_changes ORDER BY seq LIMIT ${PRUNE_BATCH}) WHERE seq <= ?1 OR at < ?2
)`
const LAST_CHANGE = 'SELECT coalesce(max(seq), 0) AS seq FROM svc_changes'
const CHANGES_AFTER = `SELECT seq, owner, payload FROM svc_changes WHERE seq > ? ORDER BY seq LIMIT ${READ_LIMIT}`
const LISTEN = 'INSERT OR REPLACE INTO svc_change_listeners (owner, until) VALUES (?, ?)'
const PRUNE_LISTENERS = 'DELETE FROM svc_change_listeners WHERE until < ?'
const UNLISTEN = 'DELETE FROM svc_change_listeners WHERE owner = ?'
const ANY_LISTENER = 'SELECT 1 AS one FROM svc_change_listeners WHERE owner <> ? AND until > ? LIMIT 1'

/** What the change log needs of its store. */
export interface ChangeLogHost {
  /** Runs `fn` inside the store's write batch; resolves once committed. */
  write<T>(fn: () => T): Promise<T>
  /** Runs `fn` on committed state, once no write batch is open. */
  read<T>(fn: () => T): Promise<T>
  sql(text: string): StatementSync
  /** This store's id in the `owners` table. */
  readonly owner: number
}

interface Pending {
  owner: string
  changes: readonly RunChange[]
  resolve(): void
  reject(error: unknown): void
}

interface Listener {
  owner: string
  listener(changes: RunChange[]): void
}

type Row = { seq: number; owner: string; payload: string }

export class SqliteChangeLog {
  readonly #host: ChangeLogHost
  /** Published, waiting for a batch to carry them. */
  #pending: Pending[] = []
  /** Written into the open batch: settled when it ends. */
  #written: Pending[] = []
  #fallback: ReturnType<typeof setTimeout> | undefined
  readonly #listeners = new Set<Listener>()
  #poll: ReturnType<typeof setInterval> | undefined
  /** The last row read; set before the first listener's `listen` resolves. */
  #cursor: number | undefined
  #baseline: Promise<unknown> | undefined
  #reading = false
  /** When this store's row in `change_listeners` is next renewed. */
  #renewAt = 0

  constructor(host: ChangeLogHost) {
    this.#host = host
  }

  /** Adds `changes` to the next batch the store commits; resolves once it has. */
  publish(owner: string, changes: readonly RunChange[]): Promise<void> {
    if (changes.length === 0) return Promise.resolve()
    return new Promise<void>((resolve, reject) => {
      this.#pending.push({ owner, changes, resolve, reject })
      if (this.#fallback !== undefined) return
      this.#fallback = setTimeout(() => this.#openBatch(), FALLBACK_MS)
      // Unref'd: a change to publish never keeps the process alive; closing the store writes it.
      this.#fallback.unref?.()
    })
  }

  /** The store's commit hook: the changes published since the last batch become its last rows. */
  beforeCommit(): void {
    if (this.#pending.length === 0) return
    clearTimeout(this.#fallback)
    this.#fallback = undefined
    const batch = this.#pending
    this.#pending = []
    const host = this.#host
    try {
      const at = Date.now()
      if (host.sql(ANY_LISTENER).get(host.owner, at) === undefined) {
        // Nobody else listens: published to no one.
        for (const pending of batch) pending.resolve()
        return
      }
      const insert = host.sql(INSERT_CHANGES)
      let seq = 0
      for (const { owner, changes } of batch) {
        for (let i = 0; i < changes.length; i += CHANGES_PER_ROW) {
          const rows = changes.slice(i, i + CHANGES_PER_ROW).map((change) => [change.id, change.taskName, change.status])
          seq = Number((insert.get(owner, at, JSON.stringify(rows)) as { seq: number }).seq)
        }
      }
      host.sql(PRUNE_CHANGES).run(seq - KEEP_ROWS, at - KEEP_MS)
      this.#written.push(...batch)
    } catch (error) {
      // One statement failed alone: the batch's own writes still commit without the changes.
      for (const pending of batch) pending.reject(error)
    }
  }

  /** The store's end hook: the changes written into the batch that ended are published, or lost with it. */
  batchEnded(ok: boolean): void {
    if (this.#written.length === 0) return
    const written = this.#written
    this.#written = []
    for (const pending of written) {
      if (ok) pending.resolve()
      else pending.reject(new Error('the SQLite batch that carried them was rolled back'))
    }
  }

  /** Calls `listener` with the changes owners other than `owner` publish from now on; resolves to the way to stop. */
  async listen(owner: string, listener: (changes: RunChange[]) => void): Promise<() => Promise<void>> {
    const entry: Listener = { owner, listener }
    this.#listeners.add(entry)
    if (this.#poll === undefined) {
      const host = this.#host
      this.#cursor = undefined
      // Listed first, so that every batch committed after the last change read here writes its changes.
      this.#baseline = this.#renew()
        .then(() => host.read(() => Number((host.sql(LAST_CHANGE).get() as { seq: number }).seq)))
        .then((seq) => {
          this.#cursor ??= seq
        })
      // Unref'd: listening for changes never keeps the process alive.
      this.#poll = setInterval(() => this.#read(), CHANGE_POLL_MS)
      this.#poll.unref?.()
    }
    try {
      // A change published after this resolves is one this listener hears.
      await this.#baseline
    } catch (error) {
      this.#listeners.delete(entry)
      if (this.#listeners.size === 0) this.#stopPolling()
      throw error
    }
    return async () => {
      this.#listeners.delete(entry)
      if (this.#listeners.size === 0) this.#stopPolling()
    }
  }

  /** The store closes: what waits to be published goes into a last batch, which the store commits; nobody listens any more. */
  stop(): void {
    this.#stopPolling()
    this.#listeners.clear()
    clearTimeout(this.#fallback)
    this.#fallback = undefined
    if (this.#pending.length > 0) this.#openBatch()
  }

  /** Opens a batch of the store's (an empty write), so that its commit writes the changes waiting. */
  #openBatch(): void {
    this.#fallback = undefined
    if (this.#pending.length === 0) return
    this.#host
      .write(() => {})
      .catch((error: unknown) => {
        // No batch opened (the store closed, the file is locked): the changes waiting are not published.
        const pending = this.#pending
        this.#pending = []
        for (const { reject } of pending) reject(error)
      })
  }

  #stopPolling(): void {
    if (this.#poll === undefined) return
    clearInterval(this.#poll)
    this.#poll = undefined
    const host = this.#host
    host
      .write(() => {
        host.sql(UNLISTEN).run(host.owner)
      })
      .catch(() => {
        // The store closed first, or the file fails: the row lapses after LISTENER_TTL_MS.
      })
  }

  /** Lists this store among the listeners until `LISTENER_TTL_MS` from now, and drops the rows that lapsed. */
  #renew(): Promise<void> {
    const host = this.#host
    const at = Date.now()
    this.#renewAt = at + LISTENER_RENEW_MS
    return host.write(() => {
      host.sql(PRUNE_LISTENERS).run(at)
      host.sql(LISTEN).run(host.owner, at + LISTENER_TTL_MS)
    })
  }

  #read(): void {
    if (Date.now() >= this.#renewAt) {
      this.#renew().catch(() => {
        // Tried again at the next read; until then the row stands until it lapses.
        this.#renewAt = 0
      })
    }
    if (this.#reading || this.#cursor === undefined) return
    this.#reading = true
    const after = this.#cursor
    this.#host
      .read(() => this.#host.sql(CHANGES_AFTER).all(after) as unknown as Row[])
      .then(
        (rows) => {
          if (rows.length > 0) this.#cursor = Number(rows[rows.length - 1].seq)
          for (const row of rows) this.#deliver(row)
        },
        () => {
          // The file cannot be read now (closed, or failing): the next read tries again from the same row.
        },
      )
      .finally(() => {
        this.#reading = false
      })
  }

  #deliver(row: Row): void {
    let changes: RunChange[] | undefined
    for (const { owner, listener } of this.#listeners) {
      if (owner === row.owner) continue
      changes ??= (JSON.parse(row.payload) as [string, string, RunChange['status']][]).map(([id, taskName, status]) => ({
        id,
        taskName,
        status,
      }))
      listener(changes)
    }
  }
}
