/**
 * The `updates` table, Postgres schema version 21 (updates.ts reads and
 * writes it). An id is unique within its run; `seq` is the order updates
 * were sent in; `data` and `answer` (the answer's result, error and time)
 * are NULL while absent; a run's updates go with it.
 */
export const UPDATES_TABLE = `
  -- Updates sent to runs, and their answers (updates.ts).
  CREATE TABLE $schema.updates (
    run_id text NOT NULL REFERENCES $schema.runs (id) ON DELETE CASCADE,
    id text NOT NULL,
    seq bigint GENERATED ALWAYS AS IDENTITY,
    name text NOT NULL,
    data jsonb,
    sent_at text NOT NULL,
    status text NOT NULL,
    answer jsonb,
    PRIMARY KEY (run_id, id)
  );
  CREATE INDEX updates_by_run ON $schema.updates (run_id, seq);
  CREATE INDEX updates_pending ON $schema.updates (run_id, seq) WHERE status = 'pending';
`
