/**
 * Run tags on Postgres (`EnqueueOptions.tags`, `RunQuery.tags`): a run's
 * tags are a row of `run_tag_sets` (schema version 20), keyed by the run's
 * `seq`, its tags an array that a GIN index finds by containment. A run's
 * tags never change, so its row is written once, by the statement that
 * inserts the run (run-inserts.ts), and deleted by the statements that
 * delete it (eviction there, retention.ts), by its primary key.
 *
 * Schema version 17 indexed the tags inside the record (a partial GIN
 * index): every update of a tagged run makes a new version of its row,
 * which entered that index again, so a tagged run cost a fifth more to run
 * than an untagged one. Version 18 wrote a row a tag, once (`run_tags`);
 * version 20 one row a run. The table has no foreign key, whose check
 * would cost every row a lookup of its run: a search reads the runs table
 * for every row it finds anyway.
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
 * Schema version 20: a run's tags as one row of `run_tag_sets`, an array
 * in a GIN index, in place of a row a tag. Measured on this store's
 * Postgres with durable settings, 10,000 runs in batches of 100, three
 * tags each: three rows cost a run 12 to 15 µs more than none, one row
 * with its array 3 to 5 µs.
 */
export const RUN_TAG_SETS_TABLE = `
  CREATE TABLE $schema.run_tag_sets (
    run_seq bigint PRIMARY KEY,
    tags text[] NOT NULL
  );
  CREATE INDEX run_tag_sets_by_tag ON $schema.run_tag_sets USING gin (tags);
  INSERT INTO $schema.run_tag_sets (run_seq, tags)
    SELECT run_seq, array_agg(tag ORDER BY tag) FROM $schema.run_tags GROUP BY run_seq;
  DROP TABLE $schema.run_tags;
`

/**
 * A data-modifying CTE body that writes the tag row of each run `rows`
 * names (a CTE with `seq` and `record` columns) that has tags: for a
 * statement that inserts runs. A tag given twice is held once.
 */
export function insertTagRows(sql: AnySql, schema: string, rows: Fragment): Fragment {
  return sql`
    INSERT INTO ${sql(schema)}.run_tag_sets (run_seq, tags)
    SELECT r.seq, ARRAY(SELECT DISTINCT jsonb_array_elements_text(r.record->'tags')) FROM ${rows} r
    WHERE jsonb_typeof(r.record->'tags') = 'array' AND jsonb_array_length(r.record->'tags') > 0`
}

/**
 * A data-modifying CTE body that deletes the tag rows of the runs `rows`
 * names (a CTE of deleted runs with a `seq` column), by their primary key.
 */
export function deleteTagRows(sql: AnySql, schema: string, rows: Fragment): Fragment {
  return sql`DELETE FROM ${sql(schema)}.run_tag_sets t USING ${rows} r WHERE t.run_seq = r.seq`
}

/** The condition that the row of `runs` holds every one of `tags`, starting with AND. */
export function hasTags(sql: AnySql, schema: string, tags: readonly string[]): Fragment {
  return sql`AND seq IN (SELECT run_seq FROM ${sql(schema)}.run_tag_sets WHERE tags @> ${tags as string[]}::text[])`
}
