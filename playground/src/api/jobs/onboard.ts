// A task with retries and durable steps. Trigger it with:
//   npx svc tasks run jobs.onboard --input '{"email":"ada@example.com"}' --root playground
import * as v from 'valibot'
import type { TaskContext } from 'svcjs'

export const route = { kind: 'task', retries: 2, timeout: 10_000 } as const

export const input = v.object({ email: v.pipe(v.string(), v.email()) })

export async function POST(ctx: TaskContext<{ email: string }>) {
  // Side effects go inside step.run: on replay the recorded output comes back instead.
  const account = await ctx.step.run('create-account', () => ({ id: crypto.randomUUID(), email: ctx.input.email }))
  await ctx.step.sleep('settle', 1)
  const mail = await ctx.step.waitForTask('welcome-email', 'jobs.email', { to: account.email })
  return { account, emailed: mail.ok }
}
