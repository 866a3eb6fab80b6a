/** `svcjs/postgres`: the Postgres run store (Node-only; loads the `postgres` driver). */
import './runtime/node-version.ts'
export { PostgresRunStore, type PostgresRunStoreOptions } from './postgres/store.ts'
export type { PostgresTransaction } from './postgres/transaction.ts'
