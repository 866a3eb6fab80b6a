/**
 * Run changes between the processes on one Postgres schema
 * (`SharedWork.publishChanges` and `onChanges`): a `NOTIFY` on a channel
 * of the schema's own, `<schema>_changes`, which every process with
 * `onRunChange` subscribers listens on.
 *
 * Nothing is sent while no other process listens (change-listeners.ts):
 * the changes are dropped, after a read of the listeners at most every
 * `CHECK_MS` while there are changes to publish. While someone listens,
 * publishing costs one statement for the changes of `COALESCE_MS`, sent on
 * any connection of the pool, after the writes that made them committed:
 * the changes wait for no transaction, and no write waits for them. One
 * statement is in flight at a time, so a process's notifications arrive in
 * the order it published them. Each notification carries
 * `{ "owner": …, "changes": [[id, taskName, status], …] }`, at most
 * `MAX_PAYLOAD_BYTES` of it (Postgres refuses a payload of 8000 bytes or
 * more, https://www.postgresql.org/docs/current/sql-notify.html); more
 * changes make more notifications of the same statement.
 *
 * Notifications are not stored: a process that is not listening when one
 * is sent never sees it.
 */
import type { Sql } from 'postgres'
import type { RunChange } from '../types.ts'
import { ChangeListeners } from './change-listeners.ts'
import { schemaChannel } from './migrations.ts'

/** How long a change waits for others to go in the same notification. */
export const COALESCE_MS = 5
/** The largest payload of one notification, in bytes of UTF-8: under Postgres's 8000, with room to spare. */
export const MAX_PAYLOAD_BYTES = 7900
const encoder = new TextEncoder()

/** The channel of the run changes of `schema`, `<schema>_changes` (`schemaChannel`). */
export function changesChannel(schema: string): string {
  return schemaChannel(schema, 'changes')
}

/**
 * The notification payloads of `changes`, each at most `MAX_PAYLOAD_BYTES`,
 * and the first change that fits in none (a task name of thousands of
 * bytes), which they leave out.
 */
export function changePayloads(owner: string, changes: readonly RunChange[]): { payloads: string[]; tooLarge?: RunChange } {
  const head = `{"owner":${JSON.stringify(owner)},"changes":[`
  const room = MAX_PAYLOAD_BYTES - encoder.encode(head).byteLength - 2
  const payloads: string[] = []
  let entries: string[] = []
  let bytes = 0
  let tooLarge: RunChange | undefined
  for (const change of changes) {
    const entry = JSON.stringify([change.id, change.taskName, change.status])
    const size = encoder.encode(entry).byteLength + 1
    if (size > room) {
      tooLarge ??= change
      continue
    }
    if (bytes + size > room) {
      payloads.push(`${head}${entries.join(',')}]}`)
      entries = []
      bytes = 0
    }
    entries.push(entry)
    bytes += size
  }
  if (entries.length > 0) payloads.push(`${head}${entries.join(',')}]}`)
  return { payloads, tooLarge }
}

/** The changes of a payload, unless `owner` published them or it is not a payload of `changePayloads`. */
export function readPayload(payload: string, owner: string): RunChange[] | undefined {
  let message: { owner?: unknown; changes?: unknown }
  try {
    message = JSON.parse(payload)
  } catch {
    return undefined
  }
  if (message?.owner === owner || !Array.isArray(message?.changes)) return undefined
  const changes: RunChange[] = []
  for (const entry of message.changes as unknown[]) {
    if (!Array.isArray(entry) || entry.length !== 3) continue
    const [id, taskName, status] = entry
    changes.push({ id, taskName, status })
  }
  return changes
}

interface Pending {
  owner: string
  changes: readonly RunChange[]
  resolve(): void
  reject(error: unknown): void
}

export interface PostgresChangesOptions {
  schema: string
  /** Runs a query once the schema is ready (the store's own way in). */
  run<T>(query: (sql: Sql) => Promise<T>): Promise<T>
}

export class PostgresChanges {
  readonly #channel: string
  readonly #run: PostgresChangesOptions['run']
  #pending: Pending[] = []
  #timer: ReturnType<typeof setTimeout> | undefined
  #sending: Promise<void> | undefined
  readonly #listeners: ChangeListeners

  constructor(options: PostgresChangesOptions) {
    this.#channel = changesChannel(options.schema)
    this.#run = options.run
    this.#listeners = new ChangeListeners(options)
  }

  /** Sends `changes` with the others of the next `COALESCE_MS`; resolves once sent. */
  publish(owner: string, changes: readonly RunChange[]): Promise<void> {
    if (changes.length === 0) return Promise.resolve()
    return new Promise<void>((resolve, reject) => {
      this.#pending.push({ owner, changes, resolve, reject })
      if (this.#timer === undefined && this.#sending === undefined) this.#arm()
    })
  }

  /**
   * Calls `listener` with the changes other owners publish; resolves to
   * the way to stop once every publisher knows of it (`CHECK_MS`).
   */
  async listen(owner: string, listener: (changes: RunChange[]) => void): Promise<() => Promise<void>> {
    const { unlisten } = await this.#run((sql) =>
      sql.listen(this.#channel, (payload) => {
        const changes = readPayload(payload, owner)
        if (changes && changes.length > 0) listener(changes)
      }),
    )
    try {
      await this.#listeners.add(owner)
    } catch (error) {
      await unlisten()
      throw error
    }
    return async () => {
      await Promise.all([this.#listeners.remove(owner), unlisten()])
    }
  }

  /** Sends what waits now, and stops renewing this process's listeners, before the store closes its connections. */
  async close(): Promise<void> {
    this.#listeners.stop()
    while (this.#sending !== undefined || this.#pending.length > 0) {
      clearTimeout(this.#timer)
      this.#timer = undefined
      await (this.#sending ?? this.#send())
    }
  }

  #arm(): void {
    this.#timer = setTimeout(() => {
      this.#timer = undefined
      void this.#send()
    }, COALESCE_MS)
  }

  #send(): Promise<void> {
    const batch = this.#pending
    this.#pending = []
    const sending = this.#notify(batch).then(() => {
      this.#sending = undefined
      if (this.#pending.length > 0 && this.#timer === undefined) this.#arm()
    })
    this.#sending = sending
    return sending
  }

  /** One statement for the whole batch, unless nobody else listens; settles each publish. Never rejects. */
  async #notify(batch: Pending[]): Promise<void> {
    const payloads: string[] = []
    const sent: Pending[] = []
    const tooLarge = new Map<Pending, RunChange>()
    for (const pending of batch) {
      try {
        if (!(await this.#listeners.othersThan(pending.owner))) {
          // Published to no one.
          pending.resolve()
          continue
        }
      } catch (error) {
        pending.reject(error)
        continue
      }
      sent.push(pending)
      const made = changePayloads(pending.owner, pending.changes)
      payloads.push(...made.payloads)
      if (made.tooLarge) tooLarge.set(pending, made.tooLarge)
    }
    try {
      if (payloads.length > 0)
        await this.#run(async (sql) => {
          await sql`SELECT pg_notify(${this.#channel}, payload) FROM unnest(${payloads}::text[]) AS payload`
        })
    } catch (error) {
      for (const pending of sent) pending.reject(error)
      return
    }
    for (const pending of sent) {
      const change = tooLarge.get(pending)
      if (!change) pending.resolve()
      else {
        pending.reject(
          new RangeError(
            `PostgresRunStore: the change of run ${change.id} of task "${change.taskName}" takes more than the ${MAX_PAYLOAD_BYTES} bytes ` +
              'a notification carries; give the task a shorter name',
          ),
        )
      }
    }
  }
}
