// A child task, started by jobs.onboard through ctx.step.waitForTask.
export const kind = 'task'

export async function POST(ctx: { input: { to: string }; attempt: number }) {
  return { sentTo: ctx.input.to, attempt: ctx.attempt }
}
