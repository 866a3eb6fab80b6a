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
 * Each write is a savepoint of its own
 * (https://www.sqlite.org/lang_savepoint.html): a write that throws is
 * rolled back to where it began, whatever number of statements it had run,
 * and rejects at once, while the batch goes on with the others' writes.
 * A write that changes the database by one statement at most, and throws
 * only before it or by it, needs none: SQLite undoes a failed statement
 * itself (https://www.sqlite.org/lang_conflict.html, ABORT), so it skips
 * the two statements a savepoint costs (`oneChange`).
 *
 * Reads outside the writes (`read`) never see a batch before it has
 * committed: while one is open, the connection would answer with its
 * uncommitted rows, so such a read waits for the batch to end and runs
 * right after it, before any other write can open the next one.
 *
 * On some errors SQLite rolls the whole transaction back itself
 * (https://www.sqlite.org/lang_transaction.html, "Response To Errors Within
 * A Transaction": SQLITE_FULL, SQLITE_IOERR, ...). Then every write of the
 * batch is gone and rejects, and the next write opens a new batch: a write
 * never runs outside a batch's transaction, where it would commit on its
 * own.
 *
 * Work that spans the batch's writes (the run store's eviction) runs once,
 * in the `commit` hook; when it throws, the whole batch is rolled back.
 *
 * A write that awaits (`writeAcross`: an app's transactional step with an
 * async function) holds the batch open across turns of the event loop. It
 * has the connection to itself meanwhile: the writes asked for while it
 * runs wait, in order, and run right after it, in the same batch, which
 * commits once it is done. So nothing of theirs is interleaved with its
 * statements, nor rolled back with it.
 */
import { resolve } from 'node:path'
import type { DatabaseSync, StatementSync } from 'node:sqlite'
import { isThenable } from '../runtime/tasks/sql/transaction.ts'
import { mayEndTransaction } from './errors.ts'

// The open batch of each file in this process. A second connection to the
// same file would wait in BEGIN IMMEDIATE for a lock that only this event
// loop can release, blocking it: that batch commits first instead.
const openBatches = new Map<string, GroupCommit>()
// How many batches each file has ended in this process, so that a
// connection that caches what it read knows when another one here wrote.
const commits = new Map<string, number>()

/**
 * Commits the batch this process has open on `path`, if any: for a write
 * outside the batches (opening a store, which migrates the file and joins
 * its owners) that would otherwise wait for the batch's lock with this
 * event loop blocked.
 */
export function commitOpenBatch(path: string): void {
  if (path !== ':memory:') openBatches.get(resolve(path))?.flush()
}

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
  /**
   * Runs when a batch ends, committed (`ok`) or not, before any reader
   * waiting for it: when not, what was cached or counted for its writes is
   * stale.
   */
  end(ok: boolean): void
  /** The error a write or a read rejects with, for `error` it threw. */
  error(error: unknown): unknown
  /** Runs once a write took its savepoint. */
  savepoint?(): void
  /** Runs once a write was undone to its savepoint. */
  undone?(): void
}

type Statement = 'begin' | 'commit' | 'rollback' | 'savepoint' | 'release' | 'undo'

export class GroupCommit {
  #db: DatabaseSync
  #statements: Record<Statement, StatementSync>
  #waiters: Waiter[] = []
  /** Reads waiting for the open batch to end. */
  #readers: (() => void)[] = []
  #open = false
  /** A write that awaits is running: the others wait in `#held`. */
  #across = false
  #held: (() => void)[] = []
  /** The batch was due to commit while a write that awaits ran. */
  #flushWhenFree = false
  #file: string | undefined
  #hooks: BatchHooks
  readonly #flushLater = () => this.flush()

  constructor(db: DatabaseSync, path: string, hooks: BatchHooks) {
    this.#db = db
    this.#file = path === ':memory:' ? undefined : resolve(path)
    this.#hooks = hooks
    this.#statements = {
      begin: db.prepare('BEGIN IMMEDIATE'),
      commit: db.prepare('COMMIT'),
      rollback: db.prepare('ROLLBACK'),
      savepoint: db.prepare('SAVEPOINT write'),
      release: db.prepare('RELEASE write'),
      undo: db.prepare('ROLLBACK TO write'),
    }
  }

  /**
   * Runs `fn` in the open batch (opening one if needed), as one savepoint;
   * resolves to its result once the batch has committed. When `fn` throws,
   * what it wrote is undone and the promise rejects at once. With
   * `oneChange`, `fn` promises to change the database by one statement at
   * most and to throw only before it or by it, and runs without a
   * savepoint.
   */
  write<T>(fn: () => T, oneChange = false): Promise<T> {
    const wait = this.#wait(() => this.write(fn, oneChange))
    if (wait) return wait
    const s = this.#statements
    const opened = this.#enter(!oneChange)
    if (opened) return opened
    let value: T
    try {
      value = fn()
      if (!oneChange) s.release.run()
    } catch (error) {
      if (!oneChange) this.#undo(error)
      // Nothing of it is left to undo, unless SQLite ended the whole transaction.
      else if (this.#lost(error)) this.#abandon(error)
      return Promise.reject(this.#hooks.error(error))
    }
    return this.#committed(value)
  }

  /**
   * `write` for a `fn` that may await: it runs as one savepoint of the open
   * batch; when it returns a promise, the batch stays open until that
   * settles and commits after it. The writes asked for meanwhile (of this
   * connection, or of another store's on the same file in this process)
   * wait and run after it, in order.
   * When `fn` rejects, what it wrote is undone and the promise rejects.
   */
  writeAcross<T>(fn: () => T | Promise<T>): Promise<T> {
    const wait = this.#wait(() => this.writeAcross(fn))
    if (wait) return wait
    const s = this.#statements
    const opened = this.#enter(true)
    if (opened) return opened
    let result: T | Promise<T>
    try {
      result = fn()
      // A value, not a promise: a write like any other, done already.
      if (!isThenable(result)) {
        s.release.run()
        return this.#committed(result)
      }
    } catch (error) {
      this.#undo(error)
      return Promise.reject(this.#hooks.error(error))
    }
    // Nothing else has run since `fn` began: from here on, the others wait.
    this.#across = true
    return (async () => {
      let value: T
      try {
        value = await result
        s.release.run()
      } catch (error) {
        this.#undo(error)
        throw this.#hooks.error(error)
      } finally {
        this.#free()
      }
      return this.#committed(value)
    })()
  }

  /**
   * Opens the batch for a write, if none is open, and its savepoint when
   * `savepoint`; a rejected promise when that fails, else undefined.
   */
  #enter(savepoint: boolean): Promise<never> | undefined {
    try {
      // Nothing outside a write runs a statement while a batch is open, so
      // this only holds after a failure nobody saw: SAVEPOINT outside a
      // transaction would start one that RELEASE commits on its own.
      if (this.#open && this.#lost())
        this.#abandon(new Error('SQLite ended the transaction of a batch before its commit: none of its writes was kept'))
      if (!this.#open) this.#begin()
      if (savepoint) {
        this.#statements.savepoint.run()
        this.#hooks.savepoint?.()
      }
      return undefined
    } catch (error) {
      return Promise.reject(this.#hooks.error(error))
    }
  }

  /** Resolves to `value` once the open batch has committed, or rejects when it fails. */
  #committed<T>(value: T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.#waiters.push({ resolve: resolve as (value: unknown) => void, reject, value })
    })
  }

  /**
   * When a write that awaits holds this file's batch (this connection's, or
   * another store's in this process, whose lock this one's BEGIN would wait
   * for with the event loop blocked), the promise of `retry` run once it is
   * done; else undefined.
   */
  #wait<T>(retry: () => Promise<T>): Promise<T> | undefined {
    const holder = this.#across ? this : this.#file === undefined ? undefined : openBatches.get(this.#file)
    if (holder === undefined || !holder.#across) return undefined
    return new Promise<T>((resolve, reject) => holder.#held.push(() => retry().then(resolve, reject)))
  }

  /** A write that awaits is done: the writes that waited run, then the batch commits. */
  #free(): void {
    this.#across = false
    const held = this.#held
    this.#held = []
    // Each runs at once and joins the batch, unless it is itself a write
    // that awaits: those after it wait again, in order, behind it.
    for (const [i, next] of held.entries()) {
      if (this.#across) {
        this.#held.push(...held.slice(i))
        break
      }
      next()
    }
    if (!this.#across && this.#flushWhenFree) {
      this.#flushWhenFree = false
      setImmediate(this.#flushLater)
    }
  }

  /**
   * Runs `fn`, a read, on what is committed: at once when no batch is open,
   * else right after the open batch has ended.
   */
  read<T>(fn: () => T): Promise<T> {
    if (!this.#open) {
      try {
        return Promise.resolve(fn())
      } catch (error) {
        return Promise.reject(this.#hooks.error(error))
      }
    }
    return new Promise<T>((resolve, reject) => {
      this.#readers.push(() => {
        try {
          resolve(fn())
        } catch (error) {
          reject(this.#hooks.error(error))
        }
      })
    })
  }

  /** The number of batches ended on this file from this process, by any connection (0 for `':memory:'`). */
  get localCommits(): number {
    return this.#file === undefined ? 0 : (commits.get(this.#file) ?? 0)
  }

  /** Whether a batch is open: this connection holds the write lock. */
  get open(): boolean {
    return this.#open
  }

  /** Commits the open batch now and settles its writes and waiting reads. Does nothing when none is open. */
  flush(): void {
    if (!this.#open) return
    // Not in the middle of a write that awaits: the batch commits after it.
    if (this.#across) return void (this.#flushWhenFree = true)
    this.#close()
    let ok = true
    let failure: unknown
    try {
      this.#hooks.commit()
      this.#statements.commit.run()
    } catch (error) {
      ok = false
      failure = error
      this.#rollback()
    }
    this.#settle(ok, failure)
  }

  #begin(): void {
    if (this.#file !== undefined) commitOpenBatch(this.#file)
    this.#statements.begin.run()
    try {
      this.#hooks.begin()
    } catch (error) {
      this.#rollback()
      throw error
    }
    this.#open = true
    if (this.#file !== undefined) openBatches.set(this.#file, this)
    // After the current turn's microtasks, so every write they make joins this batch.
    setImmediate(this.#flushLater)
  }

  /** Undoes the write that threw `error`: back to its savepoint, or the whole batch when SQLite ended the transaction. */
  #undo(error: unknown): void {
    if (!this.#lost(error)) {
      try {
        this.#statements.undo.run()
        this.#statements.release.run()
        this.#hooks.undone?.()
        return
      } catch {
        // The savepoint went with the transaction: the batch is lost, below.
      }
    }
    this.#abandon(error)
  }

  /** Whether the open batch's transaction is gone (SQLite rolled it back), `error` being what was just thrown. */
  #lost(error?: unknown): boolean {
    const open = (this.#db as { isTransaction?: boolean }).isTransaction
    if (typeof open === 'boolean') return !open
    return error !== undefined && mayEndTransaction(error)
  }

  /** Ends the batch without a commit: nothing of it is kept, and every write in it rejects with `error`. */
  #abandon(error: unknown): void {
    this.#close()
    this.#rollback()
    this.#settle(false, error)
  }

  #close(): void {
    this.#open = false
    if (this.#file !== undefined && openBatches.get(this.#file) === this) openBatches.delete(this.#file)
  }

  #rollback(): void {
    try {
      this.#statements.rollback.run()
    } catch {
      // SQLite already rolled back: the error that made it is the one reported.
    }
  }

  /** Settles what waited for the batch that just ended: the `end` hook, the reads, then the writes. */
  #settle(ok: boolean, failure: unknown): void {
    const waiters = this.#waiters
    const readers = this.#readers
    this.#waiters = []
    this.#readers = []
    if (this.#file !== undefined) commits.set(this.#file, (commits.get(this.#file) ?? 0) + 1)
    this.#hooks.end(ok)
    // Before a write's caller can open the next batch: they see what is committed now.
    for (const read of readers) read()
    const error = ok ? undefined : this.#hooks.error(failure)
    for (const waiter of waiters) {
      if (ok) waiter.resolve(waiter.value)
      else waiter.reject(error)
    }
  }
}
