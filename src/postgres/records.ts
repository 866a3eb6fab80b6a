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
 * not aliased) with its run's steps put back, in the order the run recorded
 * them (`steps.seq`, schema version 14): a SQL expression for a select list
 * or a RETURNING clause.
 */
export function wholeRecord(sql: Sql | TransactionSql, schema: string): Fragment {
  return withSteps(
    sql,
    sql`runs.record`,
    sql`SELECT json_object_agg(steps.key, steps.record ORDER BY steps.seq NULLS FIRST, steps.key)
      FROM ${sql(schema)}.steps WHERE steps.run_id = runs.id`,
  )
}

/**
 * `record` (a `jsonb` run record) with `steps` (a query of one `json`
 * object, or of null for none) as its steps. The answer is `json`, not
 * `jsonb`, which would sort the steps' keys its own way: the text of the
 * record without its steps ends in `}`, and the steps go in before it.
 */
export function withSteps(sql: Sql | TransactionSql, record: Fragment, steps: Fragment): Fragment {
  return sql`(left((${record} - 'steps')::text, -1) || ', "steps": ' || coalesce((${steps})::text, '{}') || '}')::json`
}
