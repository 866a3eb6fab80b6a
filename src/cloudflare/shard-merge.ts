/**
 * The answers of several tasks objects made one, for a worker whose runs
 * spread over them (`sharded-runtime.ts`): pages of runs merged by id,
 * task summaries added up, and what an event did in each object gathered
 * into the one page of events shard 0 lists. Pure and edge-safe.
 */
import type { CronSummary } from '../runtime/cron.ts'
import type { EventPage, EventRun, RunRecord, SentEvent, TaskSummary } from '../types.ts'
import type { EventEffectsHere } from './shard-events.ts'

/**
 * Runs of every shard, newest first: by id, which orders run ids by their
 * creation time (UUID versions 7 and 8) and which every shard lists in. The page's
 * last id is the cursor of the next page in each shard alike, held there or
 * not, so a page neither repeats nor skips a run of any shard.
 */
export function mergeRuns(pages: readonly RunRecord[][], limit: number | undefined): RunRecord[] {
  const runs = pages.flat().sort((a, b) => (a.id < b.id ? 1 : a.id > b.id ? -1 : 0))
  if (limit === undefined) return runs
  return limit > 0 ? runs.slice(0, Math.ceil(limit)) : []
}

/** Each task once, as every shard lists the same tasks: its queue counted over all of them, its newest run of any. */
export function mergeTasks(lists: readonly TaskSummary[][]): TaskSummary[] {
  const [first = []] = lists
  return first.map((task, i) => {
    // Most often at the same place in every list; a shard that lacks the task (another version of the app) adds nothing.
    const same = lists.map((list) => (list[i]?.name === task.name ? list[i] : list.find((other) => other.name === task.name)))
    const newest = same.reduce<TaskSummary['lastRun']>(
      (last, other) => (other?.lastRun && (!last || other.lastRun.id > last.id) ? other.lastRun : last),
      null,
    )
    return { ...task, queued: same.reduce((sum, other) => sum + (other?.queued ?? 0), 0), lastRun: newest }
  })
}

/**
 * Shard 0's page of events (every event is recorded in every shard), with
 * the runs each one started and the waits it met in the other shards
 * added; runs in the order their tasks were registered, as a send lists them.
 */
export function mergeEventPage(page: EventPage, elsewhere: readonly EventEffectsHere[][], taskOrder: readonly string[]): EventPage {
  const rank = new Map(taskOrder.map((name, i) => [name, i]))
  const byTask = (a: EventRun, b: EventRun) => (rank.get(a.taskName) ?? 0) - (rank.get(b.taskName) ?? 0)
  const events = page.events.map((event) => {
    const runs = [...event.runs]
    const resumed = [...event.resumed]
    for (const effects of elsewhere) {
      const here = effects.find((other) => other.id === event.id)
      if (!here) continue
      runs.push(...here.runs.filter((run) => !runs.some((held) => held.id === run.id)))
      resumed.push(...here.resumed.filter((id) => !resumed.includes(id)))
    }
    return { ...event, runs: runs.sort(byTask), resumed }
  })
  return page.cursor === undefined ? { events } : { events, cursor: page.cursor }
}

/**
 * One event as every shard answered it: the run each shard started, in
 * the order the tasks were registered, and the waits it met in any shard.
 */
export function mergeSent(answers: readonly SentEvent[], taskOrder: readonly string[]): SentEvent {
  const [first] = answers
  const rank = new Map(taskOrder.map((name, i) => [name, i]))
  const runs = answers.flatMap((answer) => answer.runs).sort((a, b) => (rank.get(a.taskName) ?? 0) - (rank.get(b.taskName) ?? 0))
  const resumed = [...new Set(answers.flatMap((answer) => answer.resumed))]
  return { id: first.id, name: first.name, runs, resumed }
}

/** The cron firings of several shards as one. */
export function mergeCron(summaries: readonly CronSummary[]): CronSummary {
  return { ok: summaries.every((summary) => summary.ok), runs: summaries.flatMap((summary) => summary.runs) }
}
