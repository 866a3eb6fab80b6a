/**
 * Run tags on Postgres (`EnqueueOptions.tags`, `RunQuery.tags`): each tag
 * of a run is a row of `run_tags` (schema version 18), keyed by the tag and
 * the run's `seq`. A run's tags never change, so its rows are written once,
 * by the statement that inserts the run (run-inserts.ts), and deleted by
 * the statements that delete it (eviction there, retention.ts), by their
 * primary key, from the tags the deleted record holds.
 *
 * Schema version 17 indexed the tags inside the record (a partial GIN
 * index): every update of a tagged run makes a new version of its row,
 * which entered that index again, so a tagged run cost a fifth more to run
 * than an untagged one. The rows are written once, and the table has no
 * foreign key, whose check would cost every row a lookup of its run: a
 * search reads the runs table for every row it finds anyway.
 */
import type { Fragment, Sql, TransactionSql } from 'postgres'

/**
 * Schema version 18: the table, filled from the runs held, and the index
 * and statistics of version 17 on the tags in the record dropped.
 */
export const RUN_TAGS_TABLE = `
  CREATE TABLE $schema.run_tags (
    tag text NOT NULL,
    run_seq bigint NOT NULL,
    PRIMARY KEY (tag, run_seq)
  );
  INSERT INTO $schema.run_tags (tag, run_seq)
    SELECT DISTINCT held.tag, runs.seq FROM $schema.runs, jsonb_array_elements_text(runs.record->'tags') AS held(tag)
    WHERE runs.record ? 'tags' AND jsonb_typeof(runs.record->'tags') = 'array';
  DROP INDEX $schema.runs_by_tags;
  DROP STATISTICS IF EXISTS $schema.runs_tags_stats;
`

type AnySql = Sql | TransactionSql

/**
 * A data-modifying CTE body that writes the tag rows of the runs `rows`
 * names (a CTE with `seq` and `record` columns): for a statement that
 * inserts runs. A tag given twice is one row (the conflict skips the
 * second, without the sort a DISTINCT would cost).
 */
export function insertTagRows(sql: AnySql, schema: string, rows: Fragment): Fragment {
  return sql`
    INSERT INTO ${sql(schema)}.run_tags (tag, run_seq)
    SELECT held.tag, r.seq FROM ${rows} r, jsonb_array_elements_text(r.record->'tags') AS held(tag)
    WHERE jsonb_typeof(r.record->'tags') = 'array'
    ON CONFLICT DO NOTHING`
}

/**
 * A data-modifying CTE body that deletes the tag rows of the runs `rows`
 * names (a CTE of deleted runs with `seq` and `tags`, their record's
 * `tags`), each by its primary key.
 */
export function deleteTagRows(sql: AnySql, schema: string, rows: Fragment): Fragment {
  return sql`
    DELETE FROM ${sql(schema)}.run_tags t USING ${rows} r, jsonb_array_elements_text(r.tags) AS held(tag)
    WHERE jsonb_typeof(r.tags) = 'array' AND t.tag = held.tag AND t.run_seq = r.seq`
}

/** The condition that the row of `runs` holds `tag`, starting with AND. */
export function hasTag(sql: AnySql, schema: string, tag: string): Fragment {
  return sql`AND seq IN (SELECT run_seq FROM ${sql(schema)}.run_tags WHERE tag = ${tag}::text)`
}
