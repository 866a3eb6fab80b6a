/** `svc/postgres`: the Postgres run store (Node-only; loads the `postgres` driver). */
export { PostgresRunStore, type PostgresRunStoreOptions } from './postgres/store.ts'
