/**
 * Run search in the SQLite dialect (`RunQuery.tags`, `metadata`, `from`,
 * `to`, as store/run-search.ts defines them): schema versions 15 and 16,
 * which both stores run, and the conditions `listRunsQuery` adds.
 *
 * - Each tag of a run is a row of `svc_run_tags`, and each top-level
 *   metadata key holding a string, number or boolean a row of
 *   `svc_run_metadata` with the value's text. A run's tags never change,
 *   so its tag rows are written once, by the store that inserts the run,
 *   in the same transaction: the Durable Object's store in the run's own
 *   write (`tagRows`), a SQLite file's store for the whole batch right
 *   before its COMMIT (`tagRowStatements`, src/sqlite/pending-tags.ts).
 *   Since version 16: an insert trigger on `svc_runs` and an index of the
 *   rows by run cost a tagged run twice the time of its insert. Metadata rows come in by a trigger on insert,
 *   and a run's metadata changes only through `updateRun` with `metadata`
 *   in its patch, which rewrites the run's metadata rows itself
 *   (`METADATA_WRITES`): a trigger on every update of a run cost SQLite a
 *   third of its run rate, measured with the store's benchmark.
 * - The rows go with their run, whoever deletes it (eviction, retention),
 *   by triggers on delete: the tag rows by their primary key, from the
 *   tags the run's record holds, the metadata rows by their index by run.
 *   A trigger does its work only for a record that holds tags or metadata
 *   (`instr` finds the key in the text without parsing it), so runs
 *   without either pay a scan of their row's text and nothing more.
 * - `created_at` is the run's `createdAt`, written with the row
 *   (`insertRunValues`) and never updated, so the index on it costs
 *   nothing after the insert; the step fills it for rows already held. A
 *   query with `from` or `to` lists runs newest first by `created_at`, then
 *   `seq` (which the index holds as the rowid), and pages by the two: the
 *   index then serves a window anywhere in the table in the time of a
 *   page, where the order of `seq` alone would walk every newer run first.
 *   The two orders differ only for runs created by processes whose clocks
 *   disagree.
 *
 * Edge-safe: no `node:` import.
 */
import type { RunQuery } from '../store/store.ts'

// A trigger's body holds `;` followed by more text on its line, which the
// chain's split (migrations.ts) leaves inside the statement.
const metadataRows = (seq: string, json: string) =>
  `INSERT OR IGNORE INTO svc_run_metadata (key, value, run_seq) SELECT key, CASE type WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' ELSE value END, ${seq} FROM json_each(${json}) WHERE type IN ('text', 'integer', 'real', 'true', 'false')`
const METADATA_ROWS = /* @__PURE__ */ metadataRows('NEW.seq', "NEW.record, '$.metadata'")

/**
 * What `updateRun` runs when its patch holds `metadata`, in the write
 * that changes the run: the run's metadata rows go, and the new
 * metadata's come in. Parameters: the run's `seq`, then the seq and the
 * metadata as JSON text (none: `NULL`).
 */
export const METADATA_WRITES = ['DELETE FROM svc_run_metadata WHERE run_seq = ?', /* @__PURE__ */ metadataRows('?', '?')] as const

/** Whether `patch` changes the run's metadata, and the JSON text of the new metadata (`null`: none) when it does. */
export function metadataChange(patch: object): { json: string | null } | undefined {
  if (!('metadata' in patch)) return undefined
  const metadata = (patch as { metadata?: unknown }).metadata
  return { json: metadata === undefined ? null : JSON.stringify(metadata) }
}
const HAS_TAGS = (row: 'NEW' | 'OLD') => `instr(${row}.record, '"tags":[') > 0`
const HAS_METADATA = (row: 'NEW' | 'OLD') => `instr(${row}.record, '"metadata":{') > 0`

/** Schema version 15: the search tables, their triggers, and `created_at`. Released: keep as it is. */
export const SEARCH_TABLES = `
CREATE TABLE IF NOT EXISTS svc_run_tags (tag TEXT NOT NULL, run_seq INTEGER NOT NULL, PRIMARY KEY (tag, run_seq)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS svc_run_tags_by_run ON svc_run_tags (run_seq);
CREATE TABLE IF NOT EXISTS svc_run_metadata (key TEXT NOT NULL, value TEXT NOT NULL, run_seq INTEGER NOT NULL, PRIMARY KEY (key, value, run_seq)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS svc_run_metadata_by_run ON svc_run_metadata (run_seq);
CREATE TRIGGER IF NOT EXISTS svc_runs_tags_insert AFTER INSERT ON svc_runs WHEN ${HAS_TAGS('NEW')} BEGIN INSERT OR IGNORE INTO svc_run_tags (tag, run_seq) SELECT value, NEW.seq FROM json_each(NEW.record, '$.tags') WHERE type = 'text'; END;
CREATE TRIGGER IF NOT EXISTS svc_runs_metadata_insert AFTER INSERT ON svc_runs WHEN ${HAS_METADATA('NEW')} BEGIN ${METADATA_ROWS}; END;
CREATE TRIGGER IF NOT EXISTS svc_runs_search_delete AFTER DELETE ON svc_runs WHEN ${HAS_TAGS('OLD')} OR ${HAS_METADATA('OLD')} BEGIN DELETE FROM svc_run_tags WHERE run_seq = OLD.seq; DELETE FROM svc_run_metadata WHERE run_seq = OLD.seq; END;
ALTER TABLE svc_runs ADD COLUMN created_at TEXT;
UPDATE svc_runs SET created_at = json_extract(record, '$.createdAt');
CREATE INDEX IF NOT EXISTS svc_runs_by_created ON svc_runs (created_at);
`

/**
 * Schema version 16: the tag rows written by the stores (`tagRows`), so
 * no insert trigger and no index by run; the delete trigger of version 15
 * split in two, the tag rows found by their primary key.
 */
export const TAG_ROWS_BY_STORE = `
DROP TRIGGER IF EXISTS svc_runs_tags_insert;
DROP TRIGGER IF EXISTS svc_runs_search_delete;
DROP INDEX IF EXISTS svc_run_tags_by_run;
CREATE TRIGGER IF NOT EXISTS svc_runs_tags_delete AFTER DELETE ON svc_runs WHEN ${HAS_TAGS('OLD')} BEGIN DELETE FROM svc_run_tags WHERE tag IN (SELECT value FROM json_each(OLD.record, '$.tags')) AND run_seq = OLD.seq; END;
CREATE TRIGGER IF NOT EXISTS svc_runs_metadata_delete AFTER DELETE ON svc_runs WHEN ${HAS_METADATA('OLD')} BEGIN DELETE FROM svc_run_metadata WHERE run_seq = OLD.seq; END;
`

// A statement for each count of rows up to TAG_ROWS_A_STATEMENT, made once.
const insertTags: string[] = []
const insertTagsText = (count: number) =>
  (insertTags[count] ??= `INSERT OR IGNORE INTO svc_run_tags (tag, run_seq) VALUES ${Array(count).fill('(?, ?)').join(', ')}`)

/** The most tag rows one statement writes. */
const TAG_ROWS_A_STATEMENT = 64

/** Adds the tag rows of the run inserted as `seq` to `params`, as pairs: only strings are tags. */
export function pushTagRows(tags: readonly unknown[] | undefined, seq: number, params: (string | number)[]): void {
  if (tags === undefined) return
  for (const tag of tags) if (typeof tag === 'string') params.push(tag, seq)
}

/**
 * The statements that write the tag rows `params` holds (pairs of
 * `pushTagRows`), with their parameters: none for none, one for each
 * `TAG_ROWS_A_STATEMENT` rows. A tag given twice is one row.
 */
export function tagRowStatements(params: readonly (string | number)[]): { text: string; params: (string | number)[] }[] {
  const statements: { text: string; params: (string | number)[] }[] = []
  for (let at = 0; at < params.length; at += TAG_ROWS_A_STATEMENT * 2) {
    const part = params.slice(at, at + TAG_ROWS_A_STATEMENT * 2)
    statements.push({ text: insertTagsText(part.length / 2), params: part })
  }
  return statements
}

/** The statements that write the tag rows of the run inserted as `seq`, for a store that writes them with the run. */
export function tagRows(tags: readonly unknown[] | undefined, seq: number): { text: string; params: (string | number)[] }[] {
  const params: (string | number)[] = []
  pushTagRows(tags, seq, params)
  return tagRowStatements(params)
}

/** Adds the conditions of `query`'s search fields to `where`, with their parameters. */
export function searchConditions(query: RunQuery, where: string[], params: (string | number)[]): void {
  for (const tag of query.tags ?? []) {
    where.push('seq IN (SELECT run_seq FROM svc_run_tags WHERE tag = ?)')
    params.push(tag)
  }
  for (const key in query.metadata) {
    where.push('seq IN (SELECT run_seq FROM svc_run_metadata WHERE key = ? AND value = ?)')
    params.push(key, query.metadata[key])
  }
  if (query.from !== undefined) {
    where.push('created_at >= ?')
    params.push(query.from)
  }
  if (query.to !== undefined) {
    where.push('created_at < ?')
    params.push(query.to)
  }
}
