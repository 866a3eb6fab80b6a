/**
 * The store's `postgres` driver: one pool, set up for a database that may
 * drop connections, restart or fail over (availability.ts, transient.ts).
 */
import postgres, { type Sql } from 'postgres'

/** A pool on `url`, its new connections given up after `connectTimeoutMs`. */
export function createClient(url: string, connectTimeoutMs: number): Sql {
  return postgres(url, {
    // CREATE … IF NOT EXISTS and friends report skipped work as notices;
    // they are not the application's business.
    onnotice: () => {},
    connection: { application_name: 'svc' },
    // Each statement is planned for the tables as they are when it runs.
    // A prepared statement keeps a generic plan made while the tables were
    // small: a batch that joins runs by id then reads the whole table (a
    // sequential scan), which costs more and more as the table grows, and
    // far more while a long transaction keeps vacuum from removing the
    // versions rows leave behind (measured by `npm run bench:chaos -- --only
    // held`). Unprepared statements also pass through poolers in
    // transaction mode.
    prepare: false,
    connect_timeout: connectTimeoutMs / 1000,
    // The driver waits this long (seconds) before it connects again after
    // a connection failed, growing with each failure in a row; its own
    // default reaches 20 s, which a call would wait out after the
    // database came back. Half a second at most: the breaker
    // (availability.ts) keeps calls from piling up meanwhile.
    backoff: (failures: number) => Math.min(0.5, 0.02 * 2 ** failures),
  })
}

/**
 * Stops the driver reading the database's array types again on each new
 * connection, once the first connection has read them (they are kept for
 * the whole pool). The driver reads them from a promise of its own that
 * nothing handles (`postgres` 3.4.9, connection.js `fetchArrayTypes`): a
 * connection ended in that moment (a backend terminated, a server going
 * down) is an unhandled rejection, which ends a Node process.
 */
export function typesKnown(sql: Sql): void {
  const options = sql.options as unknown as { fetch_types: boolean; shared: { typeArrayMap: Record<string, number> } }
  if (Object.keys(options.shared.typeArrayMap).length > 0) options.fetch_types = false
}
