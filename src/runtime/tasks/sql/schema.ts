/**
 * The tables of the two SQLite run stores, `SqliteRunStore` (node:sqlite)
 * and `DurableObjectRunStore` (a Durable Object's `ctx.storage.sql`).
 * Records are kept whole as JSON text; the columns beside them are the ones
 * the stores filter, order or compare on.
 *
 * Each statement here is a step of the SQLite dialect's migration chain
 * (migrations.ts), which both stores run: never edit what one means, since
 * databases it made exist. A new column or index is a new step (and a new
 * statement here), so a database an earlier release wrote still opens.
 * Edge-safe: no `node:` import.
 */

/** Options of `createTables`, the one place the two stores' schemas differ. */
export interface TablesOptions {
  /**
   * Keep each timer's due time (epoch ms) in a `due_at` column, indexed.
   * The Durable Object sets its alarm from the earliest one; the Node store
   * arms its timers in memory and has no such column.
   */
  timerDueAt: boolean
}

// `CREATE … IF NOT EXISTS`: releases before the chain recorded a Durable
// Object's version made these on every wake, and the chain runs them again
// on storage it can only tell the version of by its tables (migrations.ts).
// The notes on the statements stay out of the SQL text, which every worker
// bundle carries:
// - `seq` is the rowid: creation order, which listRuns walks newest first.
// - `finished_seq` orders runs by when they finished (eviction order) and is
//   NULL while a run is live, so live runs are never evicted.
// - `runs_by_key`: keys are scoped to their task and held as long as their
//   run is retained.
const RUNS = `
CREATE TABLE IF NOT EXISTS svc_runs (
  seq INTEGER PRIMARY KEY,
  id TEXT NOT NULL UNIQUE,
  task_name TEXT NOT NULL,
  status TEXT NOT NULL,
  idempotency_key TEXT,
  finished_seq INTEGER,
  record TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS svc_runs_by_task ON svc_runs (task_name, seq);
CREATE INDEX IF NOT EXISTS svc_runs_by_status ON svc_runs (status, seq);
CREATE INDEX IF NOT EXISTS svc_runs_by_finish ON svc_runs (finished_seq) WHERE finished_seq IS NOT NULL;
CREATE UNIQUE INDEX IF NOT EXISTS svc_runs_by_key ON svc_runs (task_name, idempotency_key) WHERE idempotency_key IS NOT NULL;
`

const TIMERS = `
CREATE TABLE IF NOT EXISTS svc_timers (
  seq INTEGER PRIMARY KEY,
  id TEXT NOT NULL UNIQUE,
  run_id TEXT NOT NULL,
  record TEXT NOT NULL
);
`

const TIMERS_WITH_DUE_AT = `
CREATE TABLE IF NOT EXISTS svc_timers (
  seq INTEGER PRIMARY KEY,
  id TEXT NOT NULL UNIQUE,
  run_id TEXT NOT NULL,
  due_at INTEGER NOT NULL,
  record TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS svc_timers_by_due ON svc_timers (due_at);
`

const TOKENS = `
CREATE TABLE IF NOT EXISTS svc_tokens (
  id TEXT PRIMARY KEY,
  run_id TEXT NOT NULL,
  status TEXT NOT NULL,
  record TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS svc_tokens_by_run ON svc_tokens (run_id);
`

/**
 * A run's steps in a table of their own, one row a step (schema version
 * 2), so that saving a step writes that step alone rather than the whole
 * record again (a run's thousandth step would otherwise rewrite the nine
 * hundred and ninety-nine before it). `seq` is
 * the order steps were first saved, the order of the record's `steps`
 * object; the run's own `record` keeps `"steps":{}` in its place.
 */
export const STEPS_TABLE = `
CREATE TABLE svc_steps (
  seq INTEGER PRIMARY KEY,
  run_seq INTEGER NOT NULL,
  key TEXT NOT NULL,
  record TEXT NOT NULL
);
CREATE UNIQUE INDEX svc_steps_by_run ON svc_steps (run_seq, key);
`

/**
 * Moves the steps held in each run's record into the steps table, in the
 * order the record's object held them (json_each walks it in order), and
 * leaves `"steps":{}` in the record: the upgrade of a database written
 * before STEPS_TABLE existed.
 */
export const MOVE_STEPS = `
INSERT INTO svc_steps (run_seq, key, record)
  SELECT svc_runs.seq, step.key, step.value FROM svc_runs, json_each(svc_runs.record, '$.steps') AS step ORDER BY svc_runs.seq, step.id;
UPDATE svc_runs SET record = json_set(record, '$.steps', json('{}')) WHERE record -> '$.steps' <> '{}';
`

/**
 * Schema version 13: the timers of a run, which a cancel deletes in one
 * statement (`RunStore.dropTimersOf`, `DROP_RUN_TIMERS` in queries.ts)
 * without reading every timer.
 */
export const TIMERS_BY_RUN = `
CREATE INDEX svc_timers_by_run ON svc_timers (run_id);
`

/** The statements that create the runs, timers and tokens tables with their indexes (schema version 1). */
export function createTables(options: TablesOptions): string {
  return RUNS + (options.timerDueAt ? TIMERS_WITH_DUE_AT : TIMERS) + TOKENS
}
