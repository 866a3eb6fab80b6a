/**
 * Which process holds a running run on a SQLite file that several
 * processes share. Each store registers itself in the `owners` table and
 * renews a heartbeat there; a run written `running` by a store gets that
 * store as its `owner`, in the same statement (`INSERT_RUN_OWNED`,
 * `UPDATE_RUN_OWNED`; flow control's starts set it after). At start,
 * `recover()` runs again only the running runs whose owner is gone
 * (`SqliteRunStore.claimRunning`): a process that starts on the file
 * leaves the other live processes' attempts to them, and looks at them
 * again when their holder's heartbeat would lapse.
 *
 * An owner is gone when its row is (a store that closed removes it), when
 * its heartbeat is older than `STALE_MS`, or, for an owner in the same
 * host and PID namespace (every process on one WAL file shares a host),
 * when its process no longer exists: a process killed with `kill -9` is
 * taken over at the next start, without waiting for its heartbeat to lapse.
 *
 * Every statement that makes a store a run's owner moves the run's
 * `owner_fence` on and returns it: the writes of that store's attempt check
 * both in their own statements (fences.ts), so an owner that froze
 * past `STALE_MS` and was taken over writes nothing once it thaws.
 */

import { RUN_COLUMNS, RUN_UPDATE_SET } from '../runtime/tasks/sql/queries.ts'

/** How often a store renews its heartbeat. */
export const HEARTBEAT_MS = 5_000
/** A heartbeat older than this is a process that stopped (or froze) without closing its store. */
export const STALE_MS = 4 * HEARTBEAT_MS
/** Past a holder's heartbeat lapsing, before the runs it held are asked about again. */
export const RECHECK_MARGIN_MS = 1_000

/** One store's entry in the `owners` table. */
export interface Owner {
  /** A random integer (a few bytes in each run's row, where a UUID's text would cost a tenth of a run's write). */
  owner: number
  pid: number
  host: string
  /** The PID namespace (`/proc/self/ns/pid` on Linux), '' where there is none to read. */
  ns: string
  /** Epoch milliseconds of the last heartbeat. */
  beat_at: number
  /** 1 for a store opened with `shared: true` (shared-work.ts), else 0. */
  shared: number
}

/** A store of this process as an owner, under a random id of 53 bits. */
export function ownIdentity(shared: boolean): Owner {
  const [high, low] = crypto.getRandomValues(new Uint32Array(2))
  const id = (high & 0x1fffff) * 2 ** 32 + low
  const { hostname } = process.getBuiltinModule('node:os')
  let ns = ''
  try {
    ns = process.getBuiltinModule('node:fs').readlinkSync('/proc/self/ns/pid')
  } catch {
    // Not Linux: one namespace per host is what there is.
  }
  return { owner: id, pid: process.pid, host: hostname(), ns, beat_at: Date.now(), shared: shared ? 1 : 0 }
}

/** Whether `other` may still be running the runs it holds, as `self` sees it at `now`. */
export function isAlive(other: Owner, self: Owner, now: number): boolean {
  if (now - Number(other.beat_at) > STALE_MS) return false
  if (other.host !== self.host || other.ns !== self.ns) return true
  try {
    process.kill(Number(other.pid), 0)
    return true
  } catch (error) {
    // EPERM: the process exists, under another user.
    return (error as NodeJS.ErrnoException).code === 'EPERM'
  }
}

// The owners table and the owner and fence columns (schema versions 3 and
// 4) are made by the migration chain (src/runtime/tasks/sql/file-tables.ts).
export const UPSERT_OWNER = 'INSERT OR REPLACE INTO svc_owners (owner, pid, host, ns, beat_at, shared) VALUES (?, ?, ?, ?, ?, ?)'
export const DELETE_OWNER = 'DELETE FROM svc_owners WHERE owner = ?'
export const SELECT_OWNERS = 'SELECT owner, pid, host, ns, beat_at, shared FROM svc_owners'
/** The other stores on the file opened the other way (`shared` or not than `?`). */
export const SELECT_OWNERS_OF_OTHER_MODE = 'SELECT owner, pid, host, ns, beat_at, shared FROM svc_owners WHERE shared <> ? AND owner <> ?'
export const SELECT_RUNNING_OWNER = "SELECT seq, owner, owner_fence FROM svc_runs WHERE id = ? AND status = 'running'"
/** Makes a store the run's owner, under the next fence, which it returns (claimRunning, flow control's starts). */
export const SET_OWNER = 'UPDATE svc_runs SET owner = ?, owner_fence = owner_fence + 1 WHERE seq = ? RETURNING owner_fence'
// The shared INSERT_RUN and UPDATE_RUN (sql/queries.ts) with the owner as
// well: `owner` is this store for a run written running, else NULL, which
// keeps the owner a run had (it only counts while the run is running). A
// run inserted running starts at fence 1, its first claim; any other at 0.
export const INSERT_RUN_OWNED = `INSERT INTO svc_runs (${RUN_COLUMNS}, owner, owner_fence) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`
export const UPDATE_RUN_OWNED = `UPDATE svc_runs SET ${RUN_UPDATE_SET}, owner = coalesce(?, owner) WHERE seq = ?`
/** A run made running by this store (resumed, or its delay over): its owner, under the next fence, which it returns. */
export const UPDATE_RUN_CLAIMED = `UPDATE svc_runs SET ${RUN_UPDATE_SET}, owner = ?, owner_fence = owner_fence + 1 WHERE seq = ? RETURNING owner_fence`
/** A run cancelled, from any process: the fence moves on, so the attempt in flight writes nothing more. */
export const UPDATE_RUN_CANCELLED = `UPDATE svc_runs SET ${RUN_UPDATE_SET}, owner_fence = owner_fence + 1 WHERE seq = ?`
