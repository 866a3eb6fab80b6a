/**
 * Bulk actions on the runs a filter finds: `POST /__tasks/runs/cancel` and
 * `POST /__tasks/runs/replay` (docs/run-control.md "Acting on many runs").
 *
 * The body is `{ filter, dryRun?, limit?, cursor?, children? }`. `filter`
 * is the runs list's filter as JSON (`task`, `status`, `version`, `tag`,
 * `metadata`, `from`, `to`; `tag` and `status` a string or an array) and
 * names at least one of them, so that no call acts on every run by
 * mistake. A call acts on at most `limit` runs (100 by default, 1,000 at
 * most), newest first, and answers what each became; when more may
 * match, `cursor` continues after the last one. `dryRun` lists the runs a
 * call would act on and changes nothing.
 *
 * A cancel acts on live runs (its `status` may narrow them); a replay on
 * finished runs unless `status` says otherwise. Each run is acted on by
 * the runtime's own `cancel` or `replay`, so a bulk action means for each
 * run what the single one does, on every store, and a call cut short (a
 * crash, a timeout) leaves each run acted on or not, never half: sending
 * it again acts on the rest.
 */
import type { RunRecord, RunStatus, TaskRuntime } from '../types.ts'
import { errorMessage, SvcError } from '../errors.ts'
import { describe } from '../describe.ts'
import { FINISHED_STATUSES, LIVE_STATUSES, type RunQuery } from '../tasks/store/store.ts'
import { cancelReachParam, isCancelReach } from '../tasks/engine/cancel-children.ts'
import { InvalidQueryError, parseRunFilter } from './runs-query.ts'

/** Runs a bulk call acts on when it sets no `limit`. */
export const DEFAULT_BULK_LIMIT = 100
/** The most runs one bulk call acts on. */
export const MAX_BULK_LIMIT = 1000
/** Runs acted on at once. */
const PARALLEL = 16

export type BulkAction = 'cancel' | 'replay'

/** What became of one run. */
export interface BulkItem {
  id: string
  taskName: string
  /** Its status when the call found it. */
  status: RunStatus
  /** Absent on a dry run. `skipped`: it finished (a cancel) or was gone before it was reached. */
  outcome?: 'cancelled' | 'replayed' | 'skipped' | 'failed'
  /** A replay's new run. */
  replayedAs?: string
  /** The child runs a cancel reached with it. */
  cancelledWith?: string[]
  /** Why it was skipped or failed, and the error's code. */
  error?: string
  code?: string
}

/** The answer of a bulk call. */
export interface BulkResult {
  action: BulkAction
  dryRun: boolean
  /** Runs found (and, unless a dry run, acted on) by this call. */
  matched: number
  runs: BulkItem[]
  /** Present when more runs may match: send it as `cursor` to go on after the last one. */
  cursor?: string
}

/**
 * The filter of a bulk call as JSON, the runs list's filters under the
 * same names (`from` and `to` ISO instants): what the CLI and the
 * dashboard send.
 */
export interface RunFilter {
  task?: string
  status?: string[]
  version?: string
  tag?: string[]
  metadata?: Record<string, string>
  from?: string
  to?: string
}

const FILTER_KEYS = ['task', 'status', 'version', 'tag', 'metadata', 'from', 'to'] as const
const BODY_KEYS = new Set(['filter', 'dryRun', 'limit', 'cursor', 'children'])
const FILTER_PARAMETERS = new Set<string>(['task', 'status', 'version', 'tag', 'from', 'to'])

/** The request of a bulk call, checked; a bad one throws `InvalidQueryError` (400) naming the field. */
export interface BulkRequest {
  query: RunQuery
  dryRun: boolean
  limit: number
  children: 'waited' | 'all' | 'none'
}

export function parseBulkRequest(action: BulkAction, body: unknown): BulkRequest {
  const usage = `POST /__tasks/runs/${action} takes { filter, dryRun?, limit?, cursor?${action === 'cancel' ? ', children?' : ''} }`
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw new InvalidQueryError(`${usage} (got ${describe(body)})`)
  const fields = body as Record<string, unknown>
  for (const key of Object.keys(fields)) {
    if (!BODY_KEYS.has(key) || (key === 'children' && action !== 'cancel'))
      throw new InvalidQueryError(`${usage}; "${key}" is not one of them`)
  }
  const query = filterQuery(fields.filter)
  query.status = actedStatuses(action, query.status)
  const { dryRun = false, limit = DEFAULT_BULK_LIMIT, cursor, children = 'waited' } = fields
  if (typeof dryRun !== 'boolean') throw new InvalidQueryError(`dryRun must be true or false (got ${describe(dryRun)})`)
  if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1 || limit > MAX_BULK_LIMIT) {
    throw new InvalidQueryError(`limit must be a whole number from 1 to ${MAX_BULK_LIMIT} (got ${describe(limit)})`)
  }
  if (cursor !== undefined) {
    if (typeof cursor !== 'string' || cursor === '')
      throw new InvalidQueryError(`cursor must be the cursor of the previous answer (got ${describe(cursor)})`)
    query.cursor = cursor
  }
  const reach = cancelReachParam(typeof children === 'string' ? children : describe(children))
  if (!isCancelReach(reach)) throw new InvalidQueryError(reach)
  return { query, dryRun, limit, children: reach }
}

/** The filter object as a `RunQuery`, read by the runs list's own rules (runs-query.ts). */
function filterQuery(filter: unknown): RunQuery {
  const names = FILTER_KEYS.join(', ')
  if (filter === null || typeof filter !== 'object' || Array.isArray(filter)) {
    throw new InvalidQueryError(
      `filter must be an object with at least one of ${names}, such as { "tag": "tenant:acme" } (got ${describe(filter)})`,
    )
  }
  const params = new URLSearchParams()
  for (const [key, value] of Object.entries(filter)) {
    if (!(FILTER_KEYS as readonly string[]).includes(key)) throw new InvalidQueryError(`filter takes ${names} (got "${key}")`)
    if (key === 'metadata') {
      if (value === null || typeof value !== 'object' || Array.isArray(value)) {
        throw new InvalidQueryError(
          `filter.metadata must be an object of keys and the text of their values, such as { "stage": "sent" } (got ${describe(value)})`,
        )
      }
      for (const [name, text] of Object.entries(value)) params.append(`metadata.${name}`, filterText(`filter.metadata.${name}`, text, true))
      continue
    }
    const many = key === 'tag' || key === 'status'
    for (const item of many && Array.isArray(value) ? value : [value]) params.append(key, filterText(`filter.${key}`, item, false))
  }
  if ([...params.keys()].length === 0) {
    throw new InvalidQueryError(`filter must name at least one of ${names}, so that no call acts on every run by mistake`)
  }
  return parseRunFilter(params, FILTER_PARAMETERS, '(in a bulk filter: without limit)')
}

function filterText(label: string, value: unknown, scalars: boolean): string {
  if (typeof value === 'string') return value
  if (scalars && (typeof value === 'number' || typeof value === 'boolean')) return JSON.stringify(value)
  throw new InvalidQueryError(`${label} must be a string${scalars ? ', a number or a boolean' : ''} (got ${describe(value)})`)
}

/** The statuses an action acts on: a cancel's are live, a replay's finished unless the filter names others. */
function actedStatuses(action: BulkAction, given: RunQuery['status']): readonly RunStatus[] {
  const named: readonly RunStatus[] | undefined = typeof given === 'string' ? [given] : given
  if (action === 'replay') return named ?? FINISHED_STATUSES
  if (named === undefined) return LIVE_STATUSES
  const statuses = named.filter((status) => LIVE_STATUSES.includes(status))
  if (statuses.length === 0) {
    throw new InvalidQueryError(`a cancel acts on live runs: filter.status must name ${LIVE_STATUSES.join(', ')} (got ${describe(given)})`)
  }
  return statuses
}

/** Finds the runs of `request` and, unless it is a dry run, acts on each. */
export async function bulkRuns(runtime: TaskRuntime, action: BulkAction, request: BulkRequest): Promise<BulkResult> {
  const { query, dryRun, limit } = request
  const found = await runtime.listRuns({ ...query, limit: limit + 1 })
  const page = found.slice(0, limit)
  const result: BulkResult = { action, dryRun, matched: page.length, runs: [] }
  if (found.length > limit) result.cursor = page[page.length - 1].id
  if (dryRun) {
    result.runs = page.map((run) => ({ id: run.id, taskName: run.taskName, status: run.status }))
    return result
  }
  for (let i = 0; i < page.length; i += PARALLEL) {
    const items = await Promise.all(page.slice(i, i + PARALLEL).map((run) => actOn(runtime, action, run, request)))
    result.runs.push(...items)
  }
  return result
}

async function actOn(runtime: TaskRuntime, action: BulkAction, run: RunRecord, request: BulkRequest): Promise<BulkItem> {
  const item: BulkItem = { id: run.id, taskName: run.taskName, status: run.status }
  try {
    if (action === 'cancel') {
      const cancelled = await runtime.cancel(run.id, { children: request.children })
      item.outcome = 'cancelled'
      item.cancelledWith = cancelled.cancelledWith
    } else {
      item.outcome = 'replayed'
      item.replayedAs = (await runtime.replay(run.id)).id
    }
  } catch (error) {
    const code = error instanceof SvcError ? error.code : undefined
    item.outcome = code === 'RUN_FINISHED' || code === 'RUN_NOT_FOUND' ? 'skipped' : 'failed'
    item.error = errorMessage(error)
    if (code !== undefined) item.code = code
  }
  return item
}
