/** `svc/postgres`: the Postgres run store (Node-only; loads the `postgres` driver). */
import './runtime/node-version.ts'
export { PostgresRunStore, type PostgresRunStoreOptions } from './postgres/store.ts'
/** What `ctx.step.transaction` hands its function on a Postgres store: a transaction of the `postgres` driver on the store's database. */
export type { TransactionSql as PostgresTransaction } from 'postgres'
