/**
 * The `signals` table, Postgres schema version 19 (signals.ts reads and
 * writes it). `seq` is the order signals were sent in; an id is unique
 * within its run; a run's signals go with it.
 */
export const SIGNALS_TABLE = `
  -- Signals sent to runs (signals.ts).
  CREATE TABLE $schema.signals (
    seq bigserial PRIMARY KEY,
    run_id text NOT NULL REFERENCES $schema.runs (id) ON DELETE CASCADE,
    id text NOT NULL,
    name text NOT NULL,
    taken_by text,
    record jsonb NOT NULL,
    UNIQUE (run_id, id)
  );
  CREATE INDEX signals_untaken ON $schema.signals (run_id, name, seq) WHERE taken_by IS NULL;
`
