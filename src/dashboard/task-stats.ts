/**
 * One task's runs over a window of time, read from `GET /__tasks/runs`, and
 * what the charts show of them: runs per time bucket by status, the failure
 * rate and the median and 95th percentile duration.
 */
import { MAX_RUNS_LIMIT } from '../runtime/admin/runs-query.ts'
import { api } from './api.ts'
import { FINISHED, type RunRow } from './types.ts'

/** The most runs a chart reads: at most ten pages of the runs list. */
export const MAX_CHART_RUNS = 5000

export interface WindowRuns {
  /** Newest first. */
  runs: RunRow[]
  /** Runs of the window were left out to stay within `MAX_CHART_RUNS`. */
  capped: boolean
}

/** Runs of `task` created at `since` (ms) or later, newest first, paging until a run is older than that. */
export async function windowRuns(task: string, since: number, cap = MAX_CHART_RUNS): Promise<WindowRuns> {
  const runs: RunRow[] = []
  let cursor: string | undefined
  do {
    const query = new URLSearchParams({ task, limit: String(MAX_RUNS_LIMIT) })
    if (cursor) query.set('cursor', cursor)
    const page = await api<{ runs: RunRow[]; cursor?: string }>('GET', `/__tasks/runs?${query}`)
    for (const run of page.runs) {
      if (Date.parse(run.createdAt) < since) return { runs, capped: false }
      if (runs.length === cap) return { runs, capped: true }
      runs.push(run)
    }
    cursor = page.cursor
  } while (cursor)
  return { runs, capped: false }
}

export interface Bucket {
  /** ms since the epoch; the bucket ends where the next begins. */
  start: number
  /** Runs created in the bucket, by status. */
  counts: Record<string, number>
  total: number
}

export interface TaskStats {
  buckets: Bucket[]
  /** Runs by status, over the whole window. */
  counts: Record<string, number>
  total: number
  failed: number
  /** Runs in a finished status (completed, failed, cancelled, compensation_failed). */
  finished: number
  /** Durations (finishedAt − startedAt, ms) of the finished runs that started, shortest first. */
  durations: number[]
}

/** `runs` in `count` buckets of `size` ms from `start`, by the time each was created. */
export function taskStats(runs: RunRow[], start: number, size: number, count: number): TaskStats {
  const buckets: Bucket[] = Array.from({ length: count }, (_, i) => ({ start: start + i * size, counts: {}, total: 0 }))
  const stats: TaskStats = { buckets, counts: {}, total: 0, failed: 0, finished: 0, durations: [] }
  for (const run of runs) {
    const bucket = buckets[Math.floor((Date.parse(run.createdAt) - start) / size)]
    if (!bucket) continue
    bucket.counts[run.status] = (bucket.counts[run.status] ?? 0) + 1
    bucket.total++
    stats.counts[run.status] = (stats.counts[run.status] ?? 0) + 1
    stats.total++
    if (!FINISHED.has(run.status)) continue
    stats.finished++
    if (run.status === 'failed' || run.status === 'compensation_failed') stats.failed++
    if (run.startedAt && run.finishedAt) stats.durations.push(Date.parse(run.finishedAt) - Date.parse(run.startedAt))
  }
  stats.durations.sort((a, b) => a - b)
  return stats
}

/** The `p`th percentile of `sorted` (ascending) by nearest rank: the smallest value at least `p`% of them do not exceed. */
export function percentile(sorted: number[], p: number): number | undefined {
  if (sorted.length === 0) return undefined
  return sorted[Math.max(Math.ceil((p / 100) * sorted.length), 1) - 1]
}
