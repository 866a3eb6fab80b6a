/**
 * What the search fields of `RunQuery` mean (`tags`, `metadata`, `from`,
 * `to`), written once for the memory store, and for the SQL stores'
 * queries to match (sql/search.ts, src/postgres/run-search.ts): a run
 * matches when it holds every tag asked for, each metadata key asked for
 * holds a string, number or boolean whose text is the one asked for, and
 * it was created at `from` or later and before `to`. Edge-safe.
 */
import type { RunQuery } from '../../types/run-store.ts'
import type { RunRecord } from '../../types/runs.ts'

/** The text a metadata value is searched by: a string as it is, a number or a boolean as JSON writes it; none for other values. */
export function metadataText(value: unknown): string | undefined {
  switch (typeof value) {
    case 'string':
      return value
    case 'number':
    case 'boolean':
      return JSON.stringify(value)
    default:
      return undefined
  }
}

/** Whether the query asks for any of the search fields. */
export function searches(query: RunQuery): boolean {
  return query.tags !== undefined || query.metadata !== undefined || query.from !== undefined || query.to !== undefined
}

/** Whether `run` matches the search fields of `query` (the others are each store's). */
export function matchesSearch(run: Pick<RunRecord, 'createdAt' | 'tags' | 'metadata'>, query: RunQuery): boolean {
  if (query.from !== undefined && run.createdAt < query.from) return false
  if (query.to !== undefined && run.createdAt >= query.to) return false
  if (query.tags !== undefined) {
    const tags = run.tags
    if (tags === undefined) return query.tags.length === 0
    for (const tag of query.tags) if (!tags.includes(tag)) return false
  }
  if (query.metadata !== undefined) {
    const metadata = run.metadata
    for (const key in query.metadata) {
      if (metadata === undefined || !Object.hasOwn(metadata, key) || metadataText(metadata[key]) !== query.metadata[key]) return false
    }
  }
  return true
}
