/** The task list of the dashboard: the admin summaries, each scheduled one with its zone and next tick. */
import type { TaskRuntime, TaskSummary } from '../types.ts'

export interface DashboardTask extends TaskSummary {
  /** The zone the schedule is read in; null for a task without a schedule. */
  timezone: string | null
  /** ISO timestamp of the next tick; null for a task without a schedule, or where the runtime has no cron clock. */
  nextRunAt: string | null
}

export async function dashboardTasks(runtime: TaskRuntime): Promise<DashboardTask[]> {
  const jobs = new Map(runtime.scheduledJobs().map((job) => [job.task, job]))
  return (await runtime.listTasks()).map((task) => {
    const job = jobs.get(task.name)
    if (!job) return { ...task, timezone: null, nextRunAt: null }
    return { ...task, timezone: job.timezone, nextRunAt: job.nextRun }
  })
}
