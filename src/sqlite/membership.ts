/**
 * A `SqliteRunStore`'s place among the stores on its file
 * (owners.ts): it joins the `owners` table when it opens, renews
 * its heartbeat there, claims the running runs whose holder is gone
 * (`claimRunning`), and leaves when it closes.
 */
import type { DatabaseSync, StatementSync } from 'node:sqlite'
import { commitOpenBatch } from './group-commit.ts'
import {
  DELETE_OWNER,
  HEARTBEAT_MS,
  isAlive,
  type Owner,
  ownIdentity,
  RECHECK_MARGIN_MS,
  SELECT_OWNERS,
  SELECT_OWNERS_OF_OTHER_MODE,
  SELECT_RUNNING_OWNER,
  SET_OWNER,
  STALE_MS,
  UPSERT_OWNER,
} from './owners.ts'

/** What membership needs of its store. */
export interface MembershipHost {
  readonly where: string
  readonly path: string
  readonly db: DatabaseSync
  sql(text: string): StatementSync
  /** Runs `fn` inside the store's write batch; resolves once committed. */
  write<T>(fn: () => T): Promise<T>
}

export class Membership {
  /** This store in the `owners` table: the holder of the runs that enter `running` through it. */
  readonly self: Owner
  readonly #host: MembershipHost
  #heartbeat: ReturnType<typeof setInterval> | undefined

  /**
   * Joins the file's owners, unless a live store of another process opened
   * the file the other way (`shared` or not): a shared process would take
   * a plain process's attempts, which hold no lease, for orphans. Throws
   * if one did, having written nothing.
   */
  constructor(host: MembershipHost, shared: boolean) {
    this.#host = host
    this.self = ownIdentity(shared)
    const { db } = host
    commitOpenBatch(host.path)
    db.exec('BEGIN IMMEDIATE')
    try {
      this.#register()
      const now = Date.now()
      const others = host.sql(SELECT_OWNERS_OF_OTHER_MODE).all(this.self.shared, this.self.owner) as unknown as Owner[]
      const other = others.find((owner) => isAlive(owner, this.self, now))
      if (other) {
        const how = other.shared ? 'with' : 'without'
        throw new Error(
          `${host.where}: ${host.path} is open ${how} shared: true in process ${other.pid} on ${other.host}; ` +
            `every process on a file must open it the same way (shared: ${Boolean(other.shared)}, or ${other.shared ? '' : 'no '}?shared in SVC_STORE_URL)`,
        )
      }
      db.exec('COMMIT')
    } catch (error) {
      db.exec('ROLLBACK')
      throw error
    }
    // Unref'd: a heartbeat never keeps the process alive.
    this.#heartbeat = setInterval(() => {
      this.self.beat_at = Date.now()
      host
        .write(() => this.#register())
        .catch(() => {
          // The next beat tries again; a file that refuses writes fails the store's other writes too.
        })
    }, HEARTBEAT_MS)
    this.#heartbeat.unref?.()
  }

  #register(): void {
    const { owner, pid, host, ns, beat_at, shared } = this.self
    this.#host.sql(UPSERT_OWNER).run(owner, pid, host, ns, beat_at, shared)
  }

  /**
   * Of these running runs, the ones no live process holds, taken for this
   * store under their next fence, inside the caller's write: `recover()`
   * runs their attempts again. A run another live process has in flight
   * stays with it (owners.ts says how a process counts as gone).
   * Owners found gone are removed.
   */
  claimRunning(runIds: readonly string[]): { claimed: string[]; fences: number[]; recheckInMs?: number } {
    const sql = (text: string) => this.#host.sql(text)
    const self = this.self
    const now = Date.now()
    const owners = new Map<number, Owner>()
    for (const row of sql(SELECT_OWNERS).all() as unknown as Owner[]) owners.set(row.owner, row)
    const claimed: string[] = []
    const fences: number[] = []
    // When the first heartbeat of a holder left alive lapses, unless renewed.
    let lapses: number | undefined
    for (const id of runIds) {
      const row = sql(SELECT_RUNNING_OWNER).get(id) as { seq: number; owner: number | null; owner_fence: number } | undefined
      if (!row) continue
      let fence = row.owner_fence
      if (row.owner !== self.owner) {
        const holder = row.owner === null ? undefined : owners.get(row.owner)
        if (holder && isAlive(holder, self, now)) {
          lapses = Math.min(lapses ?? Number.POSITIVE_INFINITY, Number(holder.beat_at) + STALE_MS)
          continue
        }
        // Taken over: the holder's attempt, should it go on, writes nothing more.
        fence = (sql(SET_OWNER).get(self.owner, row.seq) as { owner_fence: number }).owner_fence
      }
      claimed.push(id)
      fences.push(fence)
    }
    for (const [owner, holder] of owners) if (owner !== self.owner && !isAlive(holder, self, now)) sql(DELETE_OWNER).run(owner)
    return { claimed, fences, recheckInMs: lapses === undefined ? undefined : Math.max(lapses - now, 0) + RECHECK_MARGIN_MS }
  }

  /**
   * Gone from the owners: a run still running here is the next starting
   * process's to run again. Without waiting: while another connection
   * holds the write lock, the heartbeat that stops here lapses instead.
   */
  leave(): void {
    clearInterval(this.#heartbeat)
    commitOpenBatch(this.#host.path)
    try {
      this.#host.db.exec('PRAGMA busy_timeout = 0')
      this.#host.sql(DELETE_OWNER).run(this.self.owner)
    } catch {
      // Taken over once STALE_MS has passed.
    }
  }
}
