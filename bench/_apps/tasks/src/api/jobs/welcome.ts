// A task with three steps and a sleep: POST /__tasks/jobs.welcome
import * as v from 'valibot'
import type { TaskContext } from 'svcjs'

export const route = { kind: 'task', retries: 2 } as const

export const input = v.object({ email: v.pipe(v.string(), v.email()) })

export async function POST(ctx: TaskContext<{ email: string }>) {
  const account = await ctx.step.run('create-account', () => ({ id: crypto.randomUUID(), email: ctx.input.email }))
  await ctx.step.sleep('settle', 60)
  const sent = await ctx.step.run('send-email', () => ({ to: account.email, at: Date.now() }))
  const logged = await ctx.step.run('log', () => ({ ok: true, sent: sent.to }))
  return { account, logged }
}
