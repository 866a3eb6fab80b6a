/**
 * Who listens for run changes on a Postgres schema (`change_listeners`,
 * schema version 8), so that a process publishes none while nobody does
 * (changes.ts). Measured, a `NOTIFY` every few milliseconds cost a process
 * about a tenth more CPU per run even with nobody listening: a statement
 * costs the driver as much as a run's own.
 *
 * A process with listeners holds one row per listening owner, renewed
 * every `RENEW_MS` and gone once it stops; the row of a process that
 * died lapses after `TTL_MS`. A publisher reads the table at most once
 * every `CHECK_MS`, and only while it has changes to publish: idle, it
 * reads nothing. So a listener is known to every publisher `CHECK_MS`
 * after its row is in, and `listen()` resolves only then: a change
 * published after it resolves is sent.
 */
import type { Sql } from 'postgres'

/** How long a publisher goes on what it last read of the listeners. */
export const CHECK_MS = 500
/** How long a listener's row lasts unless renewed. */
export const TTL_MS = 30_000
const RENEW_MS = 10_000

export interface ChangeListenersOptions {
  schema: string
  /** Runs a query once the schema is ready (the store's own way in). */
  run<T>(query: (sql: Sql) => Promise<T>): Promise<T>
}

export class ChangeListeners {
  readonly #schema: string
  readonly #run: ChangeListenersOptions['run']
  /** The owners listening in this process, with how many listeners each. */
  readonly #mine = new Map<string, number>()
  #renew: ReturnType<typeof setInterval> | undefined
  /** The owners listening anywhere, as last read, and when that read began (`Date.now()`). */
  #known: { owners: Set<string>; at: number } | undefined
  #reading: Promise<void> | undefined

  constructor(options: ChangeListenersOptions) {
    this.#schema = options.schema
    this.#run = options.run
  }

  /** Whether an owner other than `owner` listens, as read at most `CHECK_MS` ago. */
  async othersThan(owner: string): Promise<boolean> {
    for (const listening of await this.#owners()) if (listening !== owner) return true
    return false
  }

  /** Lists `owner` as listening; resolves once every publisher knows it. */
  async add(owner: string): Promise<void> {
    this.#mine.set(owner, (this.#mine.get(owner) ?? 0) + 1)
    try {
      await this.#write([owner])
    } catch (error) {
      // Listed here only: the row was never written.
      this.#forget(owner)
      throw error
    }
    if (this.#renew === undefined) {
      // Unref'd: listening never keeps the process alive.
      this.#renew = setInterval(() => {
        this.#write([...this.#mine.keys()]).catch(() => {
          // The next renewal tries again; the rows stand until TTL_MS has passed.
        })
      }, RENEW_MS)
      this.#renew.unref?.()
    }
    await new Promise((resolve) => setTimeout(resolve, CHECK_MS))
  }

  /** One listener of `owner` is gone; its row goes with the last. */
  async remove(owner: string): Promise<void> {
    if (!this.#forget(owner)) return
    await this.#run(async (sql) => {
      await sql`DELETE FROM ${sql(this.#schema)}.change_listeners WHERE owner = ${owner}`
    })
  }

  /** One listener of `owner` less here; true when it was the last. */
  #forget(owner: string): boolean {
    const left = (this.#mine.get(owner) ?? 1) - 1
    if (left > 0) {
      this.#mine.set(owner, left)
      return false
    }
    this.#mine.delete(owner)
    if (this.#mine.size === 0) this.stop()
    return true
  }

  /** Stops renewing (the store closes): the rows lapse. */
  stop(): void {
    clearInterval(this.#renew)
    this.#renew = undefined
  }

  /** Inserts or renews the rows of `owners`, and drops the rows of others that lapsed. */
  #write(owners: string[]): Promise<void> {
    return this.#run(async (sql) => {
      const table = sql(this.#schema)
      // Lapsed rows of these owners are renewed, never dropped: one statement must not touch a row twice.
      await sql`
        WITH lapsed AS (
          DELETE FROM ${table}.change_listeners WHERE expires_at < now() AND owner <> ALL(${owners}::text[])
        )
        INSERT INTO ${table}.change_listeners (owner, expires_at)
          SELECT owner, now() + ${TTL_MS} * interval '1 millisecond' FROM unnest(${owners}::text[]) AS owner
        ON CONFLICT (owner) DO UPDATE SET expires_at = excluded.expires_at`
    })
  }

  /** The owners listening anywhere, read no earlier than `CHECK_MS` before this call. */
  async #owners(): Promise<Set<string>> {
    const now = Date.now()
    for (;;) {
      const known = this.#known
      if (known && now - known.at < CHECK_MS) return known.owners
      // A read in flight that began too long ago answers for then: the loop begins another.
      this.#reading ??= this.#read().finally(() => {
        this.#reading = undefined
      })
      await this.#reading
    }
  }

  async #read(): Promise<void> {
    // Dated from before the read: what it finds was true at least from then on.
    const at = Date.now()
    const rows = await this.#run(
      (sql) => sql<{ owner: string }[]>`SELECT owner FROM ${sql(this.#schema)}.change_listeners WHERE expires_at > now()`,
    )
    this.#known = { owners: new Set(rows.map((row) => row.owner)), at }
  }
}
