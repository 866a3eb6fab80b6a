/** The task list of the dashboard: the admin summaries, each scheduled one with its zone and next tick. */
import { Cron } from 'croner'
import { cronOptions, normalizeCron } from '../rules.ts'
import type { TaskRuntime, TaskSummary } from '../types.ts'

export interface DashboardTask extends TaskSummary {
  /** The zone the schedule is read in; null for a task without a schedule. */
  timezone: string | null
  /** ISO timestamp of the next tick; null for a task without a schedule. */
  nextRunAt: string | null
}

export async function dashboardTasks(runtime: TaskRuntime): Promise<DashboardTask[]> {
  const jobs = new Map(runtime.scheduledJobs().map((job) => [job.task, job]))
  return (await runtime.listTasks()).map((task) => {
    const job = jobs.get(task.name)
    if (!job) return { ...task, timezone: null, nextRunAt: null }
    // Without a running scheduler (an external one fires the ticks) the next tick is computed here.
    return { ...task, timezone: job.timezone, nextRunAt: job.nextRun ?? nextTick(job.schedule, job.timezone) }
  })
}

function nextTick(schedule: string, timezone: string): string | null {
  // Without a callback croner only parses; nothing is scheduled.
  return new Cron(normalizeCron(schedule), cronOptions(timezone)).nextRun()?.toISOString() ?? null
}
