import { defineTask } from 'svcjs'

// A task, not an HTTP route: it runs in the background, on its schedule, on
// POST /__tasks/jobs.report, or when code calls enqueue('jobs.report').
export const route = { kind: 'task', retries: 2 } as const
// Every day at 06:00 UTC (five-field cron).
export const schedule = '0 6 * * *'

export const POST = defineTask({
  handler: async (ctx) => {
    // Each step's output is recorded: when an attempt fails and is retried,
    // finished steps return their recorded output instead of running again.
    const signups = await ctx.step.run('count-signups', () => countSignups())
    const summary = await ctx.step.run('summarize', () => `${signups} new sign-ups`)
    return { signups, summary }
  },
})

// Stands in for a query to your database.
async function countSignups(): Promise<number> {
  return 3
}
