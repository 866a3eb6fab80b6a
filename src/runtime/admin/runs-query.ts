/**
 * The query of `GET /__tasks/runs` and the summary it lists for each run.
 * Every parameter is checked, and a bad one is a 400 `INVALID_QUERY` that
 * names it; a task name no app task has is not an error, since the store
 * may keep runs of a task that was renamed or removed since.
 */
import type { RunRecord, RunStatus, RunTrigger } from '../types.ts'
import { SvcError } from '../errors.ts'
import { describe } from '../describe.ts'
import { FINISHED_STATUSES, LIVE_STATUSES, type RunQuery } from '../tasks/store/store.ts'
import { MAX_VERSION_LENGTH, versionProblem } from '../tasks/definitions/versions.ts'
import { tagsOption } from '../tasks/definitions/tags.ts'
import { instantMs } from '../tasks/base/clock.ts'

/** Runs per page when the query sets no `limit`. */
export const DEFAULT_RUNS_LIMIT = 50
/** The largest `limit` a page may ask for. */
export const MAX_RUNS_LIMIT = 500

const STATUSES: readonly RunStatus[] = /* @__PURE__ */ (LIVE_STATUSES as readonly RunStatus[]).concat(FINISHED_STATUSES)
const PARAMETERS = new Set(['task', 'status', 'version', 'tag', 'from', 'to', 'limit', 'cursor'])
/** Query parameters `metadata.<key>` filter on a metadata key. */
const METADATA_PREFIX = 'metadata.'

/** One run as `GET /__tasks/runs` lists it: `attempts` is their count, `version` and `tags` the run's (absent when it has none). */
export interface RunSummary {
  id: string
  taskName: string
  status: RunStatus
  trigger: RunTrigger
  createdAt: string
  startedAt?: string
  finishedAt?: string
  attempts: number
  ok: boolean
  version?: string
  tags?: string[]
}

/** A bad parameter of the runs list. HTTP 400 `INVALID_QUERY`. */
export class InvalidQueryError extends SvcError {
  constructor(message: string) {
    super(message, 'INVALID_QUERY', 400)
  }
}

/** The `RunQuery` the search parameters ask for, with `limit` the page size (the store is asked for one more). */
export function parseRunsQuery(params: URLSearchParams): RunQuery & { limit: number } {
  const query: RunQuery & { limit: number } = { limit: limitParameter(params, DEFAULT_RUNS_LIMIT, MAX_RUNS_LIMIT) }
  Object.assign(query, parseRunFilter(params, PARAMETERS, 'and cursor'))
  const cursor = oneParameter(params, 'cursor', 'the cursor of the previous page')
  if (cursor !== undefined) query.cursor = cursor
  return query
}

/**
 * The filter of `params` (task, status, version, tag, metadata.<key>,
 * from, to), as `GET /__tasks/runs` and the bulk actions take it; `known`
 * are the parameters the endpoint takes, `more` the end of the usage line.
 */
export function parseRunFilter(params: URLSearchParams, known: ReadonlySet<string>, more: string): RunQuery {
  for (const name of params.keys()) {
    if (!known.has(name) && !(name.startsWith(METADATA_PREFIX) && name.length > METADATA_PREFIX.length)) {
      throw new InvalidQueryError(
        `Unknown query parameter "${name}"; the runs filter takes task, status (repeatable), version, tag (repeatable), metadata.<key>, from, to, limit ${more}`,
      )
    }
  }
  const query: RunQuery = {}
  const task = oneParameter(params, 'task', 'a task name')
  if (task !== undefined) query.taskName = task
  const statuses = params.getAll('status')
  if (statuses.length > 0) {
    for (const status of statuses) {
      if (!STATUSES.includes(status as RunStatus)) {
        throw new InvalidQueryError(`status must be one of ${STATUSES.join(', ')} (got ${JSON.stringify(status)})`)
      }
    }
    query.status = statuses as RunStatus[]
  }
  const version = oneParameter(params, 'version', 'a version of a task')
  if (version !== undefined) {
    // Checked as runs record it: a value no run can hold is a mistake, not an empty page.
    if (versionProblem(version) !== null) {
      throw new InvalidQueryError(
        `version must be 1 to ${MAX_VERSION_LENGTH} printable ASCII characters without spaces (got ${describe(version)})`,
      )
    }
    query.version = version
  }
  const tags = params.getAll('tag')
  if (tags.length > 0) query.tags = checkedTags(tags)
  const metadata: Record<string, string> = {}
  let any = false
  for (const [name, value] of params) {
    if (!name.startsWith(METADATA_PREFIX)) continue
    const key = name.slice(METADATA_PREFIX.length)
    if (Object.hasOwn(metadata, key)) throw new InvalidQueryError(`${name} may be given once`)
    metadata[key] = value
    any = true
  }
  if (any) query.metadata = metadata
  const from = instantParameter(params, 'from')
  if (from !== undefined) query.from = from
  const to = instantParameter(params, 'to')
  if (to !== undefined) query.to = to
  return query
}

/** Tags of a filter: each as a run's tag must be (a run could hold no other), at most as many as a run holds. */
function checkedTags(tags: readonly string[]): string[] {
  try {
    return tagsOption(tags, () => 'tag') ?? []
  } catch (error) {
    throw new InvalidQueryError((error as Error).message)
  }
}

/** `from` or `to`: an instant, as ISO 8601 (epoch milliseconds are taken too), or `undefined`. */
function instantParameter(params: URLSearchParams, name: 'from' | 'to'): string | undefined {
  const value = oneParameter(params, name, 'an ISO 8601 instant')
  if (value === undefined) return undefined
  const ms = instantMs(/^\d+$/.test(value) ? Number(value) : value, true)
  if (!Number.isFinite(ms)) {
    throw new InvalidQueryError(
      `${name} must be an instant: ISO 8601, such as 2026-11-29T00:00:00Z, or epoch milliseconds (got ${JSON.stringify(value)})`,
    )
  }
  return new Date(ms).toISOString()
}

/** Refuses a parameter not in `known`; `usage` says what the endpoint takes. */
export function checkParameters(params: URLSearchParams, known: ReadonlySet<string>, usage: string): void {
  for (const name of params.keys()) {
    if (!known.has(name)) throw new InvalidQueryError(`Unknown query parameter "${name}"; ${usage}`)
  }
}

/** The `limit` parameter, a whole number from 1 to `max`; `fallback` when absent. */
export function limitParameter(params: URLSearchParams, fallback: number, max: number): number {
  const limit = params.get('limit')
  if (limit === null) return fallback
  const n = /^\d{1,4}$/.test(limit) ? Number(limit) : Number.NaN
  if (!(n >= 1 && n <= max)) throw new InvalidQueryError(`limit must be a whole number from 1 to ${max} (got ${JSON.stringify(limit)})`)
  return n
}

/** A parameter given at most once and never empty (`what` it must be, for the message), or `undefined`. */
export function oneParameter(params: URLSearchParams, name: string, what: string): string | undefined {
  const values = params.getAll(name)
  if (values.length > 1) throw new InvalidQueryError(`${name} may be given once (got ${values.length} values)`)
  if (values[0] === '') throw new InvalidQueryError(`${name} must be ${what} (got an empty value)`)
  return values[0]
}

export function runSummary(run: RunRecord): RunSummary {
  const summary: RunSummary = {
    id: run.id,
    taskName: run.taskName,
    status: run.status,
    trigger: run.trigger,
    createdAt: run.createdAt,
    attempts: run.attempts.length,
    ok: run.ok,
  }
  if (run.startedAt !== undefined) summary.startedAt = run.startedAt
  if (run.finishedAt !== undefined) summary.finishedAt = run.finishedAt
  if (run.version !== undefined) summary.version = run.version
  if (run.tags !== undefined) summary.tags = run.tags
  return summary
}
