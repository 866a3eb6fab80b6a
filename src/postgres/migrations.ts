/**
 * The `PostgresRunStore` schema and its migrations. Every process that opens
 * a store runs `migrate()`: one transaction, under an advisory lock, so
 * processes that start together neither race to create the same tables nor
 * see half a migration. The version lives in `<schema>.migrations`.
 *
 * Records are kept as `jsonb` (a run's steps as rows of their own, see
 * `wholeRecord` in records.ts); the columns beside them are the ones
 * the store filters, orders, compares or (for the engine that shares due
 * work between processes) claims on.
 */
import { inTransaction } from './transaction.ts'
import { fnv1a } from '../runtime/hash.ts'
import { RUN_TAG_SETS_TABLE, RUN_TAGS_TABLE } from './run-tags.ts'
import { SIGNALS_TABLE } from './signal-table.ts'
import { UPDATES_TABLE } from './update-table.ts'
import type { Sql } from 'postgres'

/**
 * The channel on which a process wakes the others (`NOTIFY`) when work is
 * theirs to take, `<schema>_wake` (`schemaChannel`): attempts it let go of
 * as it shut down.
 */
export function notifyChannel(schema: string): string {
  return schemaChannel(schema, 'wake')
}

/** Postgres truncates longer identifiers, and `pg_notify` refuses longer channel names. */
const MAX_CHANNEL_BYTES = 63

/**
 * The notification channel `<schema>_<topic>` of a schema. A schema name
 * too long for that (a name is at most 63 bytes, as the channel) keeps its
 * first characters and gains a hash of the whole, so two long names that
 * start alike still get channels of their own.
 */
export function schemaChannel(schema: string, topic: string): string {
  const channel = `${schema}_${topic}`
  if (channel.length <= MAX_CHANNEL_BYTES) return channel
  return `${schema.slice(0, MAX_CHANNEL_BYTES - topic.length - 10)}_${fnv1a(schema).toString(16).padStart(8, '0')}_${topic}`
}

/**
 * The first key of the two-key advisory locks svc takes ("svc" in ASCII);
 * the second hashes the schema and what the lock is for, so stores in
 * different schemas never wait for each other.
 */
export const LOCK_CLASS = 0x737663

/**
 * The event a suspended run waits for, as `runs_by_event_wait` (version 9)
 * indexes it: `listRuns` with `waitingForEvent` writes the same expression,
 * for the index to serve it. Only event waitpoints have a name.
 */
export const EVENT_WAIT_NAME = "record #>> '{suspended,waitpoint,name}'"

/**
 * Each entry moves a schema from version `index` to `index + 1`. `$schema`
 * stands for the schema's name (checked to be a plain identifier). Never
 * edit a released entry: add one.
 */
const MIGRATIONS: readonly string[] = [
  `
  -- seq is creation order, which listRuns walks newest first.
  -- finished_seq orders runs by when they finished (eviction order) and is
  -- NULL while a run is live, so live runs are never evicted.
  -- lease_owner and lease_expires_at are for the engine that shares running
  -- attempts between processes (a process renews its lease; another takes
  -- the attempt over once it lapses); this version leaves them NULL.
  CREATE TABLE $schema.runs (
    seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id text NOT NULL UNIQUE,
    task_name text NOT NULL,
    status text NOT NULL,
    idempotency_key text,
    finished_seq bigint,
    lease_owner text,
    lease_expires_at timestamptz,
    record jsonb NOT NULL
  );
  CREATE SEQUENCE $schema.runs_finished_seq;
  CREATE INDEX runs_by_task ON $schema.runs (task_name, seq);
  CREATE INDEX runs_by_status ON $schema.runs (status, seq);
  CREATE INDEX runs_by_finish ON $schema.runs (finished_seq) WHERE finished_seq IS NOT NULL;
  CREATE INDEX runs_live ON $schema.runs (seq) WHERE finished_seq IS NULL;
  CREATE INDEX runs_by_lease ON $schema.runs (lease_expires_at) WHERE lease_expires_at IS NOT NULL;
  -- Keys are scoped to their task and held as long as their run is retained.
  CREATE UNIQUE INDEX runs_by_key ON $schema.runs (task_name, idempotency_key) WHERE idempotency_key IS NOT NULL;

  -- due_at is indexed so a process can find (and, with claimed_by and
  -- claim_expires_at, claim) the timers that are due; this version takes
  -- timers by id only.
  CREATE TABLE $schema.timers (
    seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id text NOT NULL UNIQUE,
    run_id text NOT NULL,
    kind text NOT NULL,
    due_at timestamptz NOT NULL,
    claimed_by text,
    claim_expires_at timestamptz,
    record jsonb NOT NULL
  );
  CREATE INDEX timers_by_due ON $schema.timers (due_at);

  CREATE TABLE $schema.tokens (
    id text PRIMARY KEY,
    run_id text NOT NULL,
    status text NOT NULL,
    record jsonb NOT NULL
  );
  CREATE INDEX tokens_by_run ON $schema.tokens (run_id);
  `,
  `
  -- One row per tick of a schedule that some process fired: the primary
  -- key is the claim, so each tick starts one run however many processes
  -- run the scheduler.
  CREATE TABLE $schema.cron_ticks (
    task_name text NOT NULL,
    tick timestamptz NOT NULL,
    claimed_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (task_name, tick)
  );
  -- A sweep for orphaned attempts skips runs that wait for a retry timer.
  CREATE INDEX timers_by_run ON $schema.timers (run_id, kind);
  `,
  `
  -- How many runs are retained and how many of them are live, kept by
  -- triggers in the transaction that changes the runs, so the counts are
  -- exact without a scan. Inserting a live run locks the row (FOR UPDATE)
  -- before it compares live with maxRuns: processes sharing the database
  -- cannot both take the last place.
  CREATE TABLE $schema.run_counts (
    one boolean PRIMARY KEY DEFAULT true CHECK (one),
    live bigint NOT NULL,
    total bigint NOT NULL
  );
  INSERT INTO $schema.run_counts (live, total)
    SELECT count(*) FILTER (WHERE finished_seq IS NULL), count(*) FROM $schema.runs;
  CREATE FUNCTION $schema.count_runs() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN
    IF TG_OP = 'INSERT' THEN
      UPDATE $schema.run_counts SET total = total + 1, live = live + (NEW.finished_seq IS NULL)::int;
    ELSIF TG_OP = 'DELETE' THEN
      UPDATE $schema.run_counts SET total = total - 1, live = live - (OLD.finished_seq IS NULL)::int;
    ELSE
      UPDATE $schema.run_counts SET live = live + (NEW.finished_seq IS NULL)::int - (OLD.finished_seq IS NULL)::int;
    END IF;
    RETURN NULL;
  END $$;
  CREATE TRIGGER runs_counted AFTER INSERT OR DELETE ON $schema.runs
    FOR EACH ROW EXECUTE FUNCTION $schema.count_runs();
  CREATE TRIGGER runs_live_counted AFTER UPDATE OF finished_seq ON $schema.runs
    FOR EACH ROW WHEN ((OLD.finished_seq IS NULL) <> (NEW.finished_seq IS NULL)) EXECUTE FUNCTION $schema.count_runs();
  `,
  `
  -- A run's steps, one row a step, out of the run's record (which keeps
  -- "steps": {}): saving a step writes that step, not every step its run
  -- recorded before it again. The foreign key makes a step of an unknown
  -- run an error and deletes a run's steps with it (eviction). Version 14
  -- orders them.
  CREATE TABLE $schema.steps (
    run_id text NOT NULL REFERENCES $schema.runs (id) ON DELETE CASCADE,
    key text NOT NULL,
    record jsonb NOT NULL,
    PRIMARY KEY (run_id, key)
  );
  INSERT INTO $schema.steps (run_id, key, record)
    SELECT runs.id, step.key, step.value FROM $schema.runs, jsonb_each(runs.record->'steps') AS step
    WHERE jsonb_typeof(runs.record->'steps') = 'object';
  UPDATE $schema.runs SET record = jsonb_set(record, '{steps}', '{}') WHERE record->'steps' <> '{}';
  `,
  `
  -- The fencing token of a run's lease (fences.ts): every claim of the run
  -- moves it on, and the writes of an attempt land only while it is still
  -- the one their process's claim set. A constant default adds the column
  -- without rewriting the table.
  ALTER TABLE $schema.runs ADD COLUMN lease_fence bigint NOT NULL DEFAULT 0;
  `,
  `
  -- Events (events.ts), held for a day after their time. seq is the order
  -- they were recorded, which eventsSince reads in; data is SQL NULL for an
  -- event sent without data, the jsonb null for one sent with data: null.
  CREATE TABLE $schema.events (
    seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id text NOT NULL UNIQUE,
    name text NOT NULL,
    time timestamptz NOT NULL,
    data jsonb
  );
  -- eventsSince: the events of a name from a time on.
  CREATE INDEX events_by_name ON $schema.events (name, time);
  -- The prune: the events past their retention, oldest first.
  CREATE INDEX events_by_time ON $schema.events (time);
  `,
  `
  -- What each event did (events.ts, noteEventEffects): the runs it started
  -- and the runs whose waits it met, in the order they were noted. Constant
  -- defaults add the columns without rewriting the table.
  ALTER TABLE $schema.events ADD COLUMN runs text[] NOT NULL DEFAULT '{}', ADD COLUMN resumed text[] NOT NULL DEFAULT '{}';
  -- listEvents: the events of one name, newest first (every name walks the primary key).
  CREATE INDEX events_by_name_seq ON $schema.events (name, seq);
  `,
  `
  -- The owners that listen for run changes (change-listeners.ts), each
  -- until its row lapses: a process publishes none while nobody does.
  CREATE TABLE $schema.change_listeners (
    owner text PRIMARY KEY,
    expires_at timestamptz NOT NULL
  );
  `,
  `
  -- The suspended runs that wait for an event, by its name (listRuns with
  -- waitingForEvent, what a send reads; EVENT_WAIT_NAME).
  CREATE INDEX runs_by_event_wait ON $schema.runs ((${EVENT_WAIT_NAME}), seq) WHERE status = 'suspended';
  `,
  `
  -- The processes that share the database and the versions of the tasks
  -- each serves, as <task>@<version> keys (docs/deploying.md "Runs across deploys"): one not heard
  -- from for leaseMs is gone.
  CREATE TABLE $schema.processes (
    owner text PRIMARY KEY,
    versions text[] NOT NULL,
    started_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    beat_at timestamptz NOT NULL DEFAULT now()
  );
  `,
  `
  -- Each task's finished runs in the order they finished: retention
  -- (retention.ts) deletes the ones that finished before a moment.
  CREATE INDEX runs_by_task_finish ON $schema.runs (task_name, finished_seq) WHERE finished_seq IS NOT NULL;
  `,
  `
  -- run_counts changes once a statement, not once a run: a statement that
  -- inserts, finishes or deletes 500 runs makes one new version of the row,
  -- not 500. While a long transaction keeps vacuum from removing the
  -- versions a row leaves behind, every update of the row walks them all;
  -- a version per run made that walk grow with every run, and throughput
  -- fall to a third within a minute. The counts stay exact: each statement
  -- changes them in its own transaction, from its transition tables.
  DROP TRIGGER runs_counted ON $schema.runs;
  DROP TRIGGER runs_live_counted ON $schema.runs;
  DROP FUNCTION $schema.count_runs();
  CREATE FUNCTION $schema.count_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN
    UPDATE $schema.run_counts c SET total = c.total + n.runs, live = c.live + n.live_runs
    FROM (SELECT count(*) AS runs, count(*) FILTER (WHERE finished_seq IS NULL) AS live_runs FROM inserted) n WHERE n.runs > 0;
    RETURN NULL;
  END $$;
  CREATE FUNCTION $schema.count_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN
    UPDATE $schema.run_counts c SET total = c.total - n.runs, live = c.live - n.live_runs
    FROM (SELECT count(*) AS runs, count(*) FILTER (WHERE finished_seq IS NULL) AS live_runs FROM deleted) n WHERE n.runs > 0;
    RETURN NULL;
  END $$;
  CREATE FUNCTION $schema.count_updated() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN
    UPDATE $schema.run_counts c SET live = c.live + n.live_runs
    FROM (SELECT (SELECT count(*) FROM after_update WHERE finished_seq IS NULL)
      - (SELECT count(*) FROM before_update WHERE finished_seq IS NULL) AS live_runs) n
    WHERE n.live_runs <> 0;
    RETURN NULL;
  END $$;
  CREATE TRIGGER runs_inserted_counted AFTER INSERT ON $schema.runs
    REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT EXECUTE FUNCTION $schema.count_inserted();
  CREATE TRIGGER runs_deleted_counted AFTER DELETE ON $schema.runs
    REFERENCING OLD TABLE AS deleted FOR EACH STATEMENT EXECUTE FUNCTION $schema.count_deleted();
  CREATE TRIGGER runs_updated_counted AFTER UPDATE ON $schema.runs
    REFERENCING OLD TABLE AS before_update NEW TABLE AS after_update FOR EACH STATEMENT EXECUTE FUNCTION $schema.count_updated();
  `,
  `
  -- run_counts in shards. Shard 0 counts the runs inserted, and an insert
  -- locks it to compare with maxRuns, as before. Runs that finish or are
  -- deleted are counted on shards 1 to 16, the one of the connection's
  -- backend: finishing runs no longer waits for the commit of every insert
  -- and every other finish (the row's lock is held to the commit, and a
  -- commit waits for the disk), and no one row takes a version for every
  -- statement that changes runs. The counts are the sums of the shards.
  -- An insert reads shard 0 locked, so as the last insert left it, and the
  -- others as its snapshot saw them: a run that finished since counts as
  -- live a moment longer, and a run may be refused a moment early, never
  -- admitted past maxRuns.
  ALTER TABLE $schema.run_counts RENAME TO run_counts_whole;
  CREATE TABLE $schema.run_counts (
    shard smallint PRIMARY KEY,
    live bigint NOT NULL,
    total bigint NOT NULL
  );
  INSERT INTO $schema.run_counts (shard, live, total) SELECT 0, live, total FROM $schema.run_counts_whole;
  INSERT INTO $schema.run_counts (shard, live, total) SELECT shard, 0, 0 FROM generate_series(1, 16) AS shard;
  DROP TABLE $schema.run_counts_whole;
  CREATE OR REPLACE FUNCTION $schema.count_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN
    UPDATE $schema.run_counts c SET total = c.total + n.runs, live = c.live + n.live_runs
    FROM (SELECT count(*) AS runs, count(*) FILTER (WHERE finished_seq IS NULL) AS live_runs FROM inserted) n
    WHERE c.shard = 0 AND n.runs > 0;
    RETURN NULL;
  END $$;
  CREATE OR REPLACE FUNCTION $schema.count_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN
    UPDATE $schema.run_counts c SET total = c.total - n.runs, live = c.live - n.live_runs
    FROM (SELECT count(*) AS runs, count(*) FILTER (WHERE finished_seq IS NULL) AS live_runs FROM deleted) n
    WHERE c.shard = 1 + pg_backend_pid() % 16 AND n.runs > 0;
    RETURN NULL;
  END $$;
  CREATE OR REPLACE FUNCTION $schema.count_updated() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN
    UPDATE $schema.run_counts c SET live = c.live + n.live_runs
    FROM (SELECT (SELECT count(*) FROM after_update WHERE finished_seq IS NULL)
      - (SELECT count(*) FROM before_update WHERE finished_seq IS NULL) AS live_runs) n
    WHERE c.shard = 1 + pg_backend_pid() % 16 AND n.live_runs <> 0;
    RETURN NULL;
  END $$;
  `,
  `
  -- Queued runs by task, priority and the time each became due, for
  -- starting the heaviest of a deep queue without reading all of it
  -- (flow.ts, which orders by these same expressions). Only queued runs:
  -- runs that start at once never enter it.
  CREATE INDEX runs_queued_by_weight ON $schema.runs
    (task_name, (coalesce((record->>'priority')::int, 0)), (coalesce(record->>'runAt', record->>'createdAt')), seq)
    WHERE status = 'queued';
  `,
  `
  -- The order a run recorded its steps in (records.ts reads them in it,
  -- as every other store keeps them; a replay from a step keeps the steps
  -- recorded before it). Steps saved before this version have none, and
  -- read first. A sequence as the default, not an identity column: adding
  -- the column then rewrites no row of the table.
  CREATE SEQUENCE $schema.steps_seq;
  ALTER TABLE $schema.steps ADD COLUMN seq bigint;
  ALTER TABLE $schema.steps ALTER COLUMN seq SET DEFAULT nextval('$schema.steps_seq');
  `,
  `
  -- Runtime schedules (schedules.ts): seq is the order they were made, and
  -- a schedule's key is unique within its task.
  CREATE TABLE $schema.schedules (
    seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id text NOT NULL UNIQUE,
    task text NOT NULL,
    key text,
    record jsonb NOT NULL
  );
  CREATE UNIQUE INDEX schedules_by_key ON $schema.schedules (task, key) WHERE key IS NOT NULL;
  `,
  `
  -- Run search (run-search.ts): runs by tag, by metadata and by when they
  -- were created. The first two index only the runs that hold tags or
  -- metadata, so a run without either costs them nothing, and statistics
  -- on the two expressions (Postgres 14 and later) let the planner tell a
  -- rare tag from a common one, so it reads the index for the first and
  -- walks the newest runs for the second. "C" order is the order of ISO
  -- 8601 text, and the cheapest to compare; with seq, the creation index
  -- gives a window of time its page in creation order.
  CREATE INDEX runs_by_tags ON $schema.runs USING gin ((record->'tags') jsonb_path_ops) WHERE record ? 'tags';
  CREATE INDEX runs_by_metadata ON $schema.runs USING gin ((record->'metadata') jsonb_path_ops) WHERE record ? 'metadata';
  CREATE INDEX runs_by_created ON $schema.runs (((record->>'createdAt') COLLATE "C"), seq);
  DO $do$ BEGIN
    IF current_setting('server_version_num')::int >= 140000 THEN
      EXECUTE 'CREATE STATISTICS $schema.runs_tags_stats ON (record->''tags'') FROM $schema.runs';
      EXECUTE 'CREATE STATISTICS $schema.runs_metadata_stats ON (record->''metadata'') FROM $schema.runs';
    END IF;
  END $do$;
  `,
  ...[RUN_TAGS_TABLE, SIGNALS_TABLE, RUN_TAG_SETS_TABLE, UPDATES_TABLE], // tag rows (18), signals (19), tag sets (20), updates (21)
]

/** The schema version this release writes. */
export const SCHEMA_VERSION = MIGRATIONS.length

/**
 * Creates the schema and brings it to `SCHEMA_VERSION` (or to `version`, an
 * older one, as a database an earlier release left), or refuses one that
 * a newer release migrated (its tables may mean things this code does not
 * know; writing to them could corrupt runs the newer release relies on).
 */
export async function migrate(sql: Sql, schema: string, where: string, version = SCHEMA_VERSION): Promise<void> {
  await inTransaction(sql, async (tx) => {
    // Held to the end of the transaction: a process that starts at the same
    // moment waits here, then finds the schema already migrated.
    await tx`SELECT pg_advisory_xact_lock(${LOCK_CLASS}, hashtext(${`${schema}.migrations`}))`
    await tx.unsafe(`CREATE SCHEMA IF NOT EXISTS ${schema}`)
    await tx.unsafe(
      `CREATE TABLE IF NOT EXISTS ${schema}.migrations (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`,
    )
    const [{ current }] = await tx.unsafe<{ current: number }[]>(
      `SELECT coalesce(max(version), 0)::int AS current FROM ${schema}.migrations`,
    )
    if (current > SCHEMA_VERSION) {
      throw new Error(
        `${where}: schema "${schema}" is at version ${current}, newer than the ${SCHEMA_VERSION} this version of svc knows; ` +
          'upgrade svc in every process that shares the database, or use another schema',
      )
    }
    for (let v = current; v < version; v++) {
      await tx.unsafe(MIGRATIONS[v].replaceAll('$schema', schema))
      await tx.unsafe(`INSERT INTO ${schema}.migrations (version) VALUES (${v + 1})`)
    }
  })
}
