/**
 * `createRun` on Postgres, many runs in one statement: the calls made while
 * one is in flight go together (group-commit.ts), `createRuns` sends its
 * batch in chunks of them, and a debounced trigger sends one. Each run of
 * the batch, in its order, is inserted as the statement would insert it
 * alone:
 *
 * - a run whose idempotency key its task holds already is answered with
 *   the run that holds it (`held`), and not inserted;
 * - a child that an attempt starts under a lease held here (`fence`) is
 *   inserted only while the fence holds (`leased`); the parent's row is
 *   locked `FOR KEY SHARE` to the end of the transaction, as #leaseRow in
 *   store.ts explains;
 * - a live run is refused once live runs fill `maxRuns`. The counts come
 *   from `run_counts` (migrations.ts, schema version 13), whose shard of
 *   inserts is locked first: of processes inserting at once, each compares
 *   with the counts the one before it left, and within a batch each live
 *   run counts the live runs inserted before it;
 * - a run inserted `running` gets a lease that lasts `leaseMs`: with no
 *   owner, for whichever process dispatches it to take (`acquireLease`),
 *   or held by the engine that triggered it (`owner`), under fence 1, its
 *   first claim, which the answer carries;
 * - a delayed run gets its delay timer, and a run given with steps their
 *   rows, in the same statement (a process that dies right after the
 *   insert leaves a run that any process starts when it is due);
 * - a run's tags are a row of `run_tag_sets`, inserted with it (run-tags.ts);
 * - the runs that finished longest ago are evicted past the bound (with
 *   their tokens and tag rows, and their steps through the foreign key),
 *   from where the last eviction ended (eviction-floor.ts), answering where
 *   this one ended (`evicted_to`). The eviction deletes finished runs of the
 *   statement's snapshot: not those the batch itself inserted finished,
 *   nor one another process evicted meanwhile; a later insert catches up.
 *
 * Two runs of one batch must not share an id or an idempotency key
 * (`insertKey`): the second would break a unique index, and the whole
 * statement with it.
 */
import type { PendingQuery, Sql } from 'postgres'
import { hasSteps, isFinished, type TimerRecord, withoutSteps } from '../runtime/tasks/store/store.ts'
import { timerId } from '../runtime/tasks/base/ids.ts'
import type { RunRecord, StepRecord } from '../types.ts'
import type { Fence } from './fences.ts'
import { wholeRecord, withSteps } from './records.ts'
import { deleteTagRows, insertTagRows } from './run-tags.ts'

export interface RunInsert {
  run: RunRecord
  /** The fence of the lease held here on the run whose attempt starts `run` as its child. */
  fence: Fence | undefined
  /** The engine that leases `run` as it is inserted, when it is inserted `running`. */
  owner?: string
  /** An earlier statement holding this insert lost its connection, and may have committed. */
  maybeWritten?: boolean
}

export interface InsertAnswer {
  /** The run that holds `run`'s idempotency key already. */
  held: RunRecord | null
  /** `run` as inserted; null when it was not (a held key, a lost lease, a full store). */
  inserted: RunRecord | null
  /** Whether the fence of `run`'s parent held; true without one. */
  leased: boolean
  /** The fence of the lease `owner` took on `run` as it was inserted (a bigint, as text). */
  fence: string | null
  /** The last `finished_seq` the statement evicted (a bigint, as text), on every row; null when it evicted none. */
  evicted_to: string | null
}

/** What no two runs of one batch may share: the row a run takes, and its task's idempotency key. */
export function insertKey(insert: RunInsert): string {
  const { run } = insert
  return run.idempotencyKey === undefined ? `id\n${run.id}` : `key\n${run.taskName}\n${run.idempotencyKey}`
}

/** A run of the batch, as the statement reads it (`jsonb_to_recordset`). */
interface BatchRow {
  i: number
  id: string
  task_name: string
  status: string
  key: string | null
  finished: boolean
  record: RunRecord
  /** The run's steps as `[key, record]` pairs, in the order it recorded them (a `jsonb` object would sort the keys). */
  steps: [string, StepRecord][] | null
  delay: TimerRecord | null
  parent: string | null
  held_by: string | null
  held_fence: string | null
  owner: string | null
}

function batchRow({ run, fence, owner }: RunInsert, i: number): BatchRow {
  return {
    i,
    id: run.id,
    task_name: run.taskName,
    status: run.status,
    key: run.idempotencyKey ?? null,
    finished: isFinished(run.status),
    record: withoutSteps(run),
    // The engine creates runs with none; a run given with steps has their rows inserted, and is answered with them.
    steps: hasSteps(run) ? Object.entries(run.steps) : null,
    delay:
      run.status === 'scheduled' && run.runAt !== undefined
        ? { id: timerId(run.id, 'delay'), runId: run.id, kind: 'delay', dueAt: run.runAt }
        : null,
    parent: run.parentRunId ?? null,
    held_by: fence?.owner ?? null,
    held_fence: fence?.fence ?? null,
    owner: owner !== undefined && run.status === 'running' ? owner : null,
  }
}

/** The statement that inserts `inserts`, in their order; it answers each, in the same order. */
export function insertRunsPg(
  sql: Sql,
  schema: string,
  maxRuns: number,
  leaseMs: number,
  inserts: readonly RunInsert[],
  evictFrom: string,
): PendingQuery<InsertAnswer[]> {
  const runs = sql(schema)
  return sql<InsertAnswer[]>`
    WITH b AS MATERIALIZED (
      SELECT * FROM jsonb_to_recordset(${sql.json(inserts.map(batchRow) as never)}::jsonb) AS b(
        i int, id text, task_name text, status text, key text, finished boolean, record jsonb, steps jsonb,
        delay jsonb, parent text, held_by text, held_fence bigint, owner text)
    ), held AS (
      SELECT b.i, ${wholeRecord(sql, schema)} AS record
      FROM b JOIN ${runs}.runs ON runs.task_name = b.task_name AND runs.idempotency_key = b.key
    ), parents AS (
      SELECT b.i FROM b JOIN ${runs}.runs p ON p.id = b.parent AND p.lease_owner = b.held_by AND p.lease_fence = b.held_fence
      FOR KEY SHARE OF p
    ), leased AS (
      SELECT b.i FROM b WHERE b.held_by IS NULL OR b.i IN (SELECT i FROM parents)
    ), inserts_counted AS (
      SELECT live, total FROM ${runs}.run_counts WHERE shard = 0 FOR UPDATE
    ), counts AS (
      SELECT i.live + coalesce(sum(c.live), 0) AS live, i.total + coalesce(sum(c.total), 0) AS total
      FROM inserts_counted i LEFT JOIN ${runs}.run_counts c ON c.shard > 0 GROUP BY i.live, i.total
    ), eligible AS (
      SELECT b.*, count(*) FILTER (WHERE NOT b.finished) OVER (ORDER BY b.i) AS live_rank
      FROM b WHERE b.i NOT IN (SELECT i FROM held) AND b.i IN (SELECT i FROM leased)
    ), inserted AS (
      INSERT INTO ${runs}.runs (id, task_name, status, idempotency_key, finished_seq, lease_expires_at, lease_owner, lease_fence, record)
      SELECT e.id, e.task_name, e.status, e.key,
        CASE WHEN e.finished THEN nextval(${`${schema}.runs_finished_seq`}::regclass) END,
        CASE WHEN e.status = 'running' THEN now() + ${leaseMs} * interval '1 millisecond' END,
        e.owner, CASE WHEN e.owner IS NULL THEN 0 ELSE 1 END,
        e.record
      FROM eligible e
      WHERE e.finished OR (SELECT live FROM counts) + e.live_rank <= ${maxRuns}
      ORDER BY e.i
      RETURNING id, seq, record, CASE WHEN lease_owner IS NULL THEN NULL ELSE lease_fence::text END AS fence
    ), inserted_tags AS (${insertTagRows(sql, schema, sql`inserted`)}
    ), inserted_steps AS (
      INSERT INTO ${runs}.steps (run_id, key, record)
      SELECT b.id, step.value->>0, step.value->1
      FROM inserted JOIN b ON b.id = inserted.id, jsonb_array_elements(b.steps) WITH ORDINALITY AS step(value, n)
      ORDER BY b.i, step.n
      RETURNING run_id, key, record, seq
    ), delays AS (
      INSERT INTO ${runs}.timers (id, run_id, kind, due_at, record)
      SELECT b.delay->>'id', b.id, 'delay', (b.delay->>'dueAt')::timestamptz, b.delay
      FROM inserted JOIN b ON b.id = inserted.id WHERE b.delay IS NOT NULL
      ORDER BY b.i
      ON CONFLICT (id) DO NOTHING
    ), evicted AS (
      DELETE FROM ${runs}.runs WHERE id IN (
        SELECT id FROM ${runs}.runs WHERE finished_seq > ${evictFrom}::bigint ORDER BY finished_seq
        LIMIT greatest((SELECT total FROM counts) + (SELECT count(*) FROM inserted) - ${maxRuns}, 0)
      )
      RETURNING id, seq, finished_seq
    ), evicted_tags AS (${deleteTagRows(sql, schema, sql`evicted`)}
    ), evicted_tokens AS (
      DELETE FROM ${runs}.tokens WHERE run_id IN (SELECT id FROM evicted)
    )
    SELECT held.record AS held,
      CASE WHEN b.steps IS NULL THEN inserted.record::json ELSE ${withSteps(
        sql,
        sql`inserted.record`,
        sql`SELECT json_object_agg(s.key, s.record ORDER BY s.seq) FROM inserted_steps s WHERE s.run_id = inserted.id`,
      )} END AS inserted,
      b.i IN (SELECT i FROM leased) AS leased, inserted.fence, (SELECT max(finished_seq)::text FROM evicted) AS evicted_to
    FROM b LEFT JOIN held ON held.i = b.i LEFT JOIN inserted ON inserted.id = b.id
    ORDER BY b.i`
}
