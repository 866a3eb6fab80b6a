/**
 * Flow control of a task (`route.concurrency`, `route.rateLimit`,
 * `route.debounce`, `route.priorityAging`), written once: the limits in
 * their resolved form, the bucket a run falls in, and `planStarts`, the
 * choice of which queued runs may start now. Every store calls
 * `planStarts` inside its own atomic block (a transaction, a synchronous
 * Durable Object call), so two callers never both take the last slot.
 * Edge-safe.
 *
 * - Concurrency counts `running` runs: an attempt in flight, or one waiting
 *   out a retry's backoff (the backoff holds its slot, so a failing task
 *   does not let a newer run overtake it). `suspended` runs hold none; a run
 *   whose wait is met goes back to `queued` and needs a slot again.
 * - The rate limit is a sliding-window log of first starts: a run counts
 *   from the moment it first left `queued` (its `startedAt`) for
 *   `periodSeconds`. A run resuming after a wait is not a new start. The
 *   log is the runs the store retains, so a store that evicted finished
 *   runs started within the window forgets those starts.
 * - A key names a bucket: a dotted path into the input. A run whose input
 *   has no value there (or `null`) falls in one shared bucket. A value is
 *   one bucket whatever the order of its objects' keys (`flowKey`).
 * - Queued runs are weighed by priority plus the points they gained while
 *   waiting (`priorityAging`), so that newer runs of a higher priority
 *   delay an older run for a bounded time, not for ever.
 */
import type { RouteConfig } from '../../types/routes.ts'
import type { RunRecord } from '../../types/runs.ts'
import type { FlowLimits, TaskFlow } from '../../types/flow.ts'
import { DEFAULT_PRIORITY_AGING } from '../../rules.ts'

import type { ConcurrencyLimit } from '../../types/flow.ts'

export type { ConcurrencyLimit, Debounce, FlowLimits, RateLimit, TaskFlow } from '../../types/flow.ts'

/** Reads the (already checked) flow fields of a route config. */
export function taskFlow(config: RouteConfig): TaskFlow {
  const flow: TaskFlow = {}
  const { concurrency, rateLimit, debounce, priorityAging } = config
  if (concurrency !== undefined) {
    flow.concurrency = typeof concurrency === 'number' ? { limit: concurrency } : withKey({ limit: concurrency.limit }, concurrency.key)
    if (typeof concurrency === 'object' && concurrency.perKey !== undefined) flow.concurrency.perKey = concurrency.perKey
  }
  if (rateLimit !== undefined) {
    flow.rateLimit = withKey({ limit: rateLimit.limit, periodSeconds: rateLimit.periodSeconds }, rateLimit.key)
  }
  if (debounce !== undefined) flow.debounce = withKey({ seconds: debounce.seconds }, debounce.key)
  if (priorityAging !== undefined) flow.priorityAging = priorityAging
  return flow
}

function withKey<T extends object>(limit: T, key: string | undefined): T & { key?: string } {
  return key === undefined ? limit : { ...limit, key }
}

/**
 * One line for people: `concurrency 5 per input.userId, 10 starts per 60 s,
 * debounce 30 s`, or `-`; a priority aging other than the default is named too.
 */
export function describeFlow(flow: TaskFlow | null | undefined): string {
  if (!flow) return '-'
  const per = (key: string | undefined) => (key === undefined ? '' : ` per ${key}`)
  const parts: string[] = []
  const { concurrency } = flow
  if (concurrency?.perKey !== undefined)
    parts.push(`concurrency ${concurrency.limit}, ${concurrency.perKey}${per(concurrency.key)} in turn`)
  else if (concurrency) parts.push(`concurrency ${concurrency.limit}${per(concurrency.key)}`)
  if (flow.rateLimit) parts.push(`${flow.rateLimit.limit} starts per ${flow.rateLimit.periodSeconds} s${per(flow.rateLimit.key)}`)
  if (flow.debounce) parts.push(`debounce ${flow.debounce.seconds} s${per(flow.debounce.key)}`)
  if (flow.priorityAging === false) parts.push('strict priority')
  else if (flow.priorityAging !== undefined) parts.push(`priority aging ${flow.priorityAging}/s`)
  return parts.join(', ') || '-'
}

/** Whether runs of the task may have to wait for a slot. */
export function limitsStarts(flow: FlowLimits | undefined): flow is FlowLimits {
  return flow?.concurrency !== undefined || flow?.rateLimit !== undefined
}

/**
 * How many queued runs, at most, `planStarts` could start under `limits`
 * while `running` runs hold slots, when neither limit is per key; undefined
 * when one is (a run blocked in its bucket does not block another bucket's,
 * so any number could). A store may read only that many of its queue, the
 * heaviest first (`byPriority`), and none at all for 0.
 */
export function placesFor(limits: FlowLimits, running: number): number | undefined {
  const { concurrency, rateLimit } = limits
  // Fair shares: a cap over every key, which running runs may fill; any key's runs could take what is left.
  if (concurrency?.perKey !== undefined && running >= concurrency.limit) return 0
  if (concurrency?.key !== undefined || rateLimit?.key !== undefined) return undefined
  const slots = concurrency ? Math.max(0, concurrency.limit - running) : Number.POSITIVE_INFINITY
  return Math.min(slots, rateLimit ? rateLimit.limit : Number.POSITIVE_INFINITY)
}

/** Whether running runs can leave no queued run a place at all (one shared concurrency bucket): a store may count them before it reads its queue. */
export function mayBeFull(limits: FlowLimits): boolean {
  return placesFor(limits, Number.POSITIVE_INFINITY) === 0
}

/**
 * The bucket of `input` under `path` (`input.userId`): the canonical JSON
 * text of the value there, or `''` (the shared bucket) when the path is
 * unset or the input has no value there. Every store computes buckets with
 * this one function, on the input as it reads it back.
 */
export function flowKey(input: unknown, path: string | undefined): string {
  if (!path) return ''
  let value: unknown = input
  for (const part of path.split('.').slice(1)) {
    if (value === null || typeof value !== 'object') return ''
    value = (value as Record<string, unknown>)[part]
  }
  if (value === undefined || value === null) return ''
  return typeof value === 'object' ? JSON.stringify(value, sortedKeys) : JSON.stringify(value)
}

/**
 * A `JSON.stringify` replacer that writes every object's keys in sorted
 * order, nested ones included (arrays keep theirs). Without it, `{ a, b }`
 * and `{ b, a }` would be two buckets, and a caller could escape a per-key
 * limit by reordering keys; Postgres's `jsonb` also hands objects back in
 * an order of its own, not the one they were written in.
 */
function sortedKeys(_key: string, value: unknown): unknown {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return value
  // No prototype: a key named `__proto__` stays a key.
  const sorted: Record<string, unknown> = Object.create(null)
  for (const key of Object.keys(value).sort()) sorted[key] = (value as Record<string, unknown>)[key]
  return sorted
}

/** What `planStarts` weighs of a run; a store may pass its own records. */
export type FlowRun = Pick<RunRecord, 'id' | 'input' | 'createdAt' | 'runAt' | 'startedAt' | 'priority'>

export interface StartPlan<R extends FlowRun = RunRecord> {
  /** The queued runs to start now, in the order `planStarts` weighed them. */
  start: R[]
  /**
   * When the rate limit blocks a run: the first moment a start leaves its
   * window (ISO), and the run it blocks, to look again then.
   */
  wake?: { at: string; runId: string }
}

/**
 * Which queued runs may start at `now` (epoch ms). `queued` is in creation
 * order; `running` are the task's running runs; `started` its runs that
 * first started within the rate window (any status). Runs are weighed by
 * priority, higher first, aged as `byPriority` says, and in creation order
 * at equal weight. A run blocked by its bucket does not block a later run
 * in another bucket.
 */
export function planStarts<R extends FlowRun>(
  limits: FlowLimits,
  queued: readonly R[],
  running: readonly FlowRun[],
  started: readonly FlowRun[],
  now: number,
): StartPlan<R> {
  const { concurrency, rateLimit } = limits
  const busy = new Map<string, number>()
  if (concurrency) {
    for (const run of running) {
      const key = flowKey(run.input, concurrency.key)
      busy.set(key, (busy.get(key) ?? 0) + 1)
    }
  }
  const window = new Map<string, number[]>()
  const periodMs = rateLimit ? rateLimit.periodSeconds * 1000 : 0
  if (rateLimit) {
    for (const run of started) {
      const at = run.startedAt === undefined ? Number.NaN : Date.parse(run.startedAt)
      if (!(at > now - periodMs)) continue
      const key = flowKey(run.input, rateLimit.key)
      const starts = window.get(key)
      if (starts) starts.push(at)
      else window.set(key, [at])
    }
  }
  const plan: StartPlan<R> = { start: [] }
  /** Whether the rate limit lets `run` start now; if so, its start is counted. */
  const rateAllows = (run: FlowRun): boolean => {
    // A run that started before (it waited, then came back) is no new start.
    if (!rateLimit || run.startedAt !== undefined) return true
    const rateKey = flowKey(run.input, rateLimit.key)
    let starts = window.get(rateKey)
    if (!starts) window.set(rateKey, (starts = []))
    if (starts.length >= rateLimit.limit) {
      // The window frees a place when enough of its starts have left it.
      starts.sort((a, b) => a - b)
      const at = starts[starts.length - rateLimit.limit] + periodMs
      if (!plan.wake || at < Date.parse(plan.wake.at)) plan.wake = { at: new Date(at).toISOString(), runId: run.id }
      return false
    }
    starts.push(now)
    return true
  }
  const weighed = byPriority(queued, limits.priorityAging ?? DEFAULT_PRIORITY_AGING, now)
  if (concurrency?.perKey !== undefined) {
    plan.start = fairStarts(weighed, { ...concurrency, perKey: concurrency.perKey }, busy, running.length, rateAllows)
    return plan
  }
  for (const run of weighed) {
    const slotKey = concurrency ? flowKey(run.input, concurrency.key) : ''
    if (concurrency && (busy.get(slotKey) ?? 0) >= concurrency.limit) {
      // One bucket and no rate limit: a full bucket blocks every later run.
      if (concurrency.key === undefined && !rateLimit) break
      continue
    }
    if (!rateAllows(run)) continue
    if (concurrency) busy.set(slotKey, (busy.get(slotKey) ?? 0) + 1)
    plan.start.push(run)
  }
  return plan
}

/**
 * Fair shares (`concurrency.perKey`): of `weighed` (queued runs, heaviest
 * first), the runs to start while `running` runs of every key hold slots
 * (`busy` of them per key), at most `limit` at once in all and `perKey` per
 * key. Each free slot goes to the key that runs fewest, the one whose next
 * run is heavier at a tie; within a key, runs start heaviest first. So a
 * key with thousands queued takes its turn beside one with a few, and does
 * not hold it back.
 */
function fairStarts<R extends FlowRun>(
  weighed: readonly R[],
  concurrency: ConcurrencyLimit & { perKey: number },
  busy: Map<string, number>,
  running: number,
  rateAllows: (run: FlowRun) => boolean,
): R[] {
  const { limit, perKey, key } = concurrency
  // Each key's queue, heaviest first; keys in the order of their heaviest run.
  const queues = new Map<string, R[]>()
  for (const run of weighed) {
    const bucket = flowKey(run.input, key)
    const queue = queues.get(bucket)
    if (queue) queue.push(run)
    else queues.set(bucket, [run])
  }
  const heads = new Map<string, number>()
  const start: R[] = []
  let total = running
  while (total < limit) {
    let next: string | undefined
    for (const [bucket, queue] of queues) {
      const held = busy.get(bucket) ?? 0
      if ((heads.get(bucket) ?? 0) >= queue.length || held >= perKey) continue
      // Map order is the order of each key's heaviest run: at a tie, the key whose best run weighed more goes first.
      if (next === undefined || held < (busy.get(next) ?? 0)) next = bucket
    }
    if (next === undefined) break
    const queue = queues.get(next)!
    const at = heads.get(next) ?? 0
    heads.set(next, at + 1)
    const run = queue[at]
    if (!rateAllows(run)) continue
    busy.set(next, (busy.get(next) ?? 0) + 1)
    total++
    start.push(run)
  }
  return start
}

/**
 * `runs` by weight, heaviest first: its priority plus `aging` points for
 * each second it has waited at `now` since it became due (its `runAt`, else
 * its `createdAt`), or its priority alone when `aging` is `false`. A delayed
 * run ages from its due time, so a delay earns it no place. A run queued
 * again after a wait keeps the time it first became due, as it keeps its
 * place in creation order. A stable sort: equal weights keep creation order.
 */
function byPriority<R extends FlowRun>(runs: readonly R[], aging: number | false, now: number): readonly R[] {
  const first = runs[0]?.priority ?? 0
  if (runs.every((run) => (run.priority ?? 0) === first)) {
    // One priority: creation order is already the order of waiting, unless a delay moved a run's due time.
    if (aging === false || runs.every((run) => run.runAt === undefined)) return runs
  }
  if (aging === false) return runs.toSorted((a, b) => (b.priority ?? 0) - (a.priority ?? 0))
  const weighed = runs.map((run) => ({ run, weight: (run.priority ?? 0) + aging * waitedSeconds(run, now) }))
  weighed.sort((a, b) => b.weight - a.weight)
  return weighed.map(({ run }) => run)
}

/** Seconds `run` has waited at `now` since it became due; 0 for a due time ahead of `now` (another process's clock). */
function waitedSeconds(run: FlowRun, now: number): number {
  const due = Date.parse(run.runAt ?? run.createdAt)
  return due < now ? (now - due) / 1000 : 0
}

/** The patch that starts a queued run: `running`, and its first start time unless it has one. */
export function startedRun<R extends Pick<RunRecord, 'status' | 'startedAt'>>(run: R, nowIso: string): R {
  const next: R = { ...run, status: 'running' }
  next.startedAt ??= nowIso
  return next
}
