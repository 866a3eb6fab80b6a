/**
 * The faults the chaos harness throws at a Postgres, each from a plain
 * connection of its own (`application_name` 'chaos', so that it never
 * hits itself): backends terminated, every free connection slot held, a
 * transaction left open. A server restart needs the server's process, so
 * the caller passes a `PostgresServer`.
 */
import postgres, { type Sql } from 'postgres'

/** The Postgres server itself, for the faults that stop it. */
export interface PostgresServer {
  /** Stops the server, keeping its data: 'fast' ends sessions cleanly, 'immediate' as a crash does. */
  halt(mode: 'fast' | 'immediate'): Promise<void>
  /** Starts it again on the same port and data; resolves once it accepts connections. */
  resume(): Promise<void>
}

function admin(url: string, max = 1): Sql {
  return postgres(url, { onnotice: () => {}, max, connection: { application_name: 'chaos' } })
}

/**
 * Terminates every backend of the svc processes on the database of `url`
 * (their `application_name` is 'svc') every `everyMs`, until the returned
 * function is called; it resolves to how many were terminated.
 */
export function killBackends(url: string, everyMs: number): () => Promise<number> {
  const sql = admin(url)
  let killed = 0
  let stopped = false
  const loop = (async () => {
    while (!stopped) {
      const rows = await sql<{ done: boolean }[]>`
        SELECT pg_terminate_backend(pid) AS done FROM pg_stat_activity
        WHERE application_name = 'svc' AND datname = current_database() AND pid <> pg_backend_pid()`.catch(() => [])
      killed += rows.filter((row) => row.done).length
      await new Promise((resolve) => setTimeout(resolve, everyMs))
    }
  })()
  return async () => {
    stopped = true
    await loop
    await sql.end()
    return killed
  }
}

/**
 * Opens connections to the server of `url` until it refuses another (every
 * slot taken, the reserved ones too when the user is a superuser), and
 * holds them until the returned function is called; resolves once they are
 * held, to how many it holds.
 */
export async function holdEverySlot(url: string): Promise<{ held: number; release(): Promise<void> }> {
  const held: Sql[] = []
  for (;;) {
    const sql = admin(url)
    try {
      await sql`SELECT 1`
      held.push(sql)
    } catch {
      await sql.end({ timeout: 0 })
      break
    }
  }
  return {
    held: held.length,
    async release() {
      await Promise.all(held.map((sql) => sql.end({ timeout: 0 })))
    },
  }
}

/**
 * Opens a transaction that holds a snapshot (`txid_current()`), which keeps
 * vacuum from removing any row version that changed since, until the
 * returned function is called.
 */
export async function holdTransaction(url: string): Promise<() => Promise<void>> {
  const sql = admin(url)
  const reserved = await sql.reserve()
  await reserved`BEGIN`
  await reserved`SELECT txid_current()`
  return async () => {
    await reserved`ROLLBACK`
    reserved.release()
    await sql.end()
  }
}
