/**
 * A run's record as `PostgresRunStore` keeps it: its row in `runs` holds the
 * record with `"steps": {}`, and each step is a row of `steps` (run, key),
 * so that saving a step costs that step's size however many its run
 * recorded before. Writes of a run's record go through `withoutSteps`
 * (store.ts); every statement that hands a record back selects `wholeRecord`.
 */
import type { Fragment, Sql, TransactionSql } from 'postgres'

/**
 * The record of the row `runs` (the runs table of `schema`, by that name,
 * not aliased) with its run's steps put back: a SQL expression for a select
 * list or a RETURNING clause.
 */
export function wholeRecord(sql: Sql | TransactionSql, schema: string): Fragment {
  return sql`runs.record || jsonb_build_object('steps', coalesce(
    (SELECT jsonb_object_agg(steps.key, steps.record) FROM ${sql(schema)}.steps WHERE steps.run_id = runs.id), '{}'))`
}
