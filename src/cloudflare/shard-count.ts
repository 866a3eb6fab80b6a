/**
 * The highest number of shards a tasks object has been called with, kept
 * in its storage. Runs never move between objects, so a worker built with
 * fewer shards than before would no longer reach the runs, keys and tokens
 * of the objects it left out. The count may grow, never shrink: an object
 * that is called with fewer refuses the call, saying what to set. Shard 0
 * hears from every worker (listings and events go to every shard), so a
 * deploy with fewer shards fails at its first listing, event or cron tick.
 * Edge-safe.
 */
import { SvcError } from '../runtime/errors.ts'
import { shardIndexOf } from './binding.ts'
import type { SqlStorageLike } from './sql-store.ts'

const TABLE = 'CREATE TABLE IF NOT EXISTS svc_shards (id INTEGER PRIMARY KEY CHECK (id = 1), shards INTEGER NOT NULL)'
const INDEX_TABLE = 'CREATE TABLE IF NOT EXISTS svc_shard (id INTEGER PRIMARY KEY CHECK (id = 1), shard INTEGER NOT NULL)'

/** A worker built with fewer shards than an object has been called with. HTTP 500 `SHARDS_REDUCED`. */
export class ShardsReducedError extends SvcError {
  constructor(shards: number, highest: number) {
    super(
      `This app's task runs are spread over ${highest} Durable Objects, but this worker was built with shards: ${shards}; ` +
        `the runs of the objects it leaves out would be out of reach. Set shards back to ${highest}: the number of shards can grow, never shrink`,
      'SHARDS_REDUCED',
      500,
    )
  }
}

export class ShardCount {
  readonly #sql: SqlStorageLike
  #highest: number

  constructor(sql: SqlStorageLike) {
    this.#sql = sql
    sql.exec(TABLE)
    const [row] = sql.exec('SELECT shards FROM svc_shards WHERE id = 1').toArray()
    // An object from before shards were counted was the only one.
    this.#highest = row ? Number(row.shards) : 1
  }

  /** Records `shards` when it is the highest yet; throws `ShardsReducedError` when it is below it. */
  check(shards: number | undefined): void {
    if (shards === undefined || shards === this.#highest) return
    if (shards < this.#highest) throw new ShardsReducedError(shards, this.#highest)
    this.#sql.exec('INSERT INTO svc_shards (id, shards) VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET shards = excluded.shards', shards)
    this.#highest = shards
  }
}

/**
 * This object's shard: read from the name the worker reached it by
 * (`ctx.id.name`), and kept in its storage for a wake that comes without
 * one (the alarm of an object woken again after a restart, where the
 * runtime does not give it its name).
 */
export function objectShardIndex(name: string | undefined, sql: SqlStorageLike, shards: number): number {
  sql.exec(INDEX_TABLE)
  const [row] = sql.exec('SELECT shard FROM svc_shard WHERE id = 1').toArray()
  const kept = row === undefined ? undefined : Number(row.shard)
  if (name === undefined && kept !== undefined) return kept
  // A lone object is shard 0 and keeps it too: woken by its alarm after the
  // app grew to several shards, it knows which it is.
  const shard = shards === 1 ? (kept ?? 0) : shardIndexOf(name)
  if (shard !== kept)
    sql.exec('INSERT INTO svc_shard (id, shard) VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET shard = excluded.shard', shard)
  return shard
}
