/**
 * `PostgresRunStore`'s conditions for the search fields of `RunQuery`
 * (`tags`, `metadata`, `from`, `to`, as store/run-search.ts defines them),
 * each written as an index reads it (migrations.ts): the tags by
 * containment in `run_tag_sets` (schema version 20, run-tags.ts), containment (`@>`) on the
 * record's `metadata` beside the partial index's own condition (version
 * 17), and the creation time in "C" order.
 */
import type { Fragment, Sql } from 'postgres'
import type { RunQuery } from '../runtime/tasks/store/store.ts'
import { hasTags } from './run-tags.ts'

/** The search conditions of `query` on the runs of `schema`, each starting with AND; empty when it asks for none. */
export function searchConditions(sql: Sql, schema: string, query: RunQuery): Fragment {
  let conditions = sql``
  if (query.tags !== undefined && query.tags.length > 0) conditions = sql`${conditions} ${hasTags(sql, schema, query.tags)}`
  if (query.metadata !== undefined && Object.keys(query.metadata).length > 0) {
    conditions = sql`${conditions} AND record ? 'metadata'`
    for (const key in query.metadata) {
      // One containment per JSON value whose text is the one asked for.
      const alternatives = jsonValuesOf(query.metadata[key]).map((value) => sql`record->'metadata' @> ${sql.json({ [key]: value })}::jsonb`)
      conditions = sql`${conditions} AND (${alternatives.reduce((either, next) => sql`${either} OR ${next}`)})`
    }
  }
  if (query.from !== undefined) conditions = sql`${conditions} AND ${sql.unsafe(CREATED)} >= ${query.from}::text`
  if (query.to !== undefined) conditions = sql`${conditions} AND ${sql.unsafe(CREATED)} < ${query.to}::text`
  return conditions
}

/** A run's creation time as `runs_by_created` indexes it. */
const CREATED = `((record->>'createdAt') COLLATE "C")`

/**
 * How a page of `query` is ordered and where it starts after `cursor`:
 * newest first by `seq`, or, for a window of creation times, by creation
 * time then `seq`, which `runs_by_created` serves wherever the window lies
 * (the order of `seq` alone would walk every newer run first). The two
 * differ only for runs made by processes whose clocks disagree.
 */
export function pageOrder(sql: Sql, schema: string, query: RunQuery): { after: Fragment; orderBy: Fragment } {
  const runs = sql`${sql(schema)}.runs`
  const cursor = query.cursor ?? null
  if (query.from === undefined && query.to === undefined) {
    return {
      after: sql`AND (${cursor}::text IS NULL OR seq < (SELECT seq FROM ${runs} WHERE id = ${cursor}::text))`,
      orderBy: sql`seq DESC`,
    }
  }
  const created = sql.unsafe(CREATED)
  return {
    after: cursor === null ? sql`` : sql`AND (${created}, seq) < (SELECT ${created}, seq FROM ${runs} WHERE id = ${cursor}::text)`,
    orderBy: sql`${created} DESC, seq DESC`,
  }
}

/** The JSON values whose search text (`metadataText`) is `text`: the string, and the number or boolean it writes. */
function jsonValuesOf(text: string): (string | number | boolean)[] {
  const values: (string | number | boolean)[] = [text]
  if (text === 'true' || text === 'false') values.push(text === 'true')
  else if (text !== '' && JSON.stringify(Number(text)) === text) values.push(Number(text))
  return values
}
