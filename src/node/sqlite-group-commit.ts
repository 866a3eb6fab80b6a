/**
 * Group commit for `SqliteRunStore`: the writes of one event-loop turn share
 * one transaction and one commit, so a thousand concurrent runs pay for one
 * fsync instead of a thousand.
 *
 * A write runs at once, synchronously, inside the open transaction: its
 * reads see every earlier write of the batch (one connection reads its own
 * uncommitted changes), which is what a compare-and-set needs, and the
 * write lock that `BEGIN IMMEDIATE` took keeps other processes out until the
 * commit. Its promise settles only after the `COMMIT` that holds it, so a
 * caller never acts on a write a crash could still take back.
 *
 * A write that throws rejects at once, and the batch goes on with the
 * others' writes. It must leave nothing behind: SQLite undoes a failed
 * statement on its own (https://www.sqlite.org/lang_conflict.html, ABORT),
 * so a write of one statement needs nothing more. Work that spans the
 * batch's writes (the run store's eviction) runs once, in the `commit` hook.
 */
import { resolve } from 'node:path'
import type { DatabaseSync, StatementSync } from 'node:sqlite'

// The open batch of each file in this process. A second connection to the
// same file would wait in BEGIN IMMEDIATE for a lock that only this event
// loop can release, blocking it: that batch commits first instead.
const openBatches = new Map<string, GroupCommit>()
// How many batches each file has committed in this process, so that a
// connection that caches what it read knows when another one here wrote.
const commits = new Map<string, number>()

interface Waiter {
  resolve(value: unknown): void
  reject(error: unknown): void
  value: unknown
}

export interface BatchHooks {
  /** Runs once a batch holds the write lock, before its first write. */
  begin(): void
  /**
   * Runs right before the COMMIT, inside the batch: the batch's last write,
   * for work done once per batch rather than once per write. When it
   * throws, the batch is rolled back and every write in it rejects.
   */
  commit(): void
  /** Runs when a batch ends, committed (`ok`) or not: what was cached for it is stale. */
  end(ok: boolean): void
}

export class GroupCommit {
  #statements: Record<'begin' | 'commit' | 'rollback', StatementSync>
  #waiters: Waiter[] = []
  #open = false
  #file: string | undefined
  #hooks: BatchHooks

  constructor(db: DatabaseSync, path: string, hooks: BatchHooks) {
    this.#file = path === ':memory:' ? undefined : resolve(path)
    this.#hooks = hooks
    this.#statements = {
      begin: db.prepare('BEGIN IMMEDIATE'),
      commit: db.prepare('COMMIT'),
      rollback: db.prepare('ROLLBACK'),
    }
  }

  /** Runs `fn` in the open batch (opening one if needed); resolves to its result once committed. */
  write<T>(fn: () => T): Promise<T> {
    const s = this.#statements
    try {
      if (!this.#open) {
        if (this.#file !== undefined) {
          openBatches.get(this.#file)?.flush()
          openBatches.set(this.#file, this)
        }
        s.begin.run()
        this.#open = true
        this.#hooks.begin()
        // After the current turn's microtasks, so every write they make joins this batch.
        setImmediate(() => this.flush())
      }
    } catch (error) {
      if (this.#file !== undefined && openBatches.get(this.#file) === this) openBatches.delete(this.#file)
      return Promise.reject(error)
    }
    let value: T
    try {
      value = fn()
    } catch (error) {
      return Promise.reject(error)
    }
    return new Promise<T>((resolve, reject) => {
      this.#waiters.push({ resolve: resolve as (value: unknown) => void, reject, value })
    })
  }

  /** The number of batches committed to this file from this process, by any connection (0 for `':memory:'`). */
  get localCommits(): number {
    return this.#file === undefined ? 0 : (commits.get(this.#file) ?? 0)
  }

  /** Whether a batch is open: this connection holds the write lock. */
  get open(): boolean {
    return this.#open
  }

  /** Commits the open batch now and settles its writes. Does nothing when none is open. */
  flush(): void {
    if (!this.#open) return
    this.#open = false
    if (this.#file !== undefined && openBatches.get(this.#file) === this) openBatches.delete(this.#file)
    const waiters = this.#waiters
    this.#waiters = []
    let failure: unknown
    try {
      this.#hooks.commit()
      this.#statements.commit.run()
    } catch (error) {
      failure = error
      try {
        this.#statements.rollback.run()
      } catch {
        // SQLite already rolled back; the commit's error is the one to report.
      }
    }
    if (this.#file !== undefined) commits.set(this.#file, (commits.get(this.#file) ?? 0) + 1)
    this.#hooks.end(failure === undefined)
    for (const waiter of waiters) {
      if (failure === undefined) waiter.resolve(waiter.value)
      else waiter.reject(failure)
    }
  }
}
