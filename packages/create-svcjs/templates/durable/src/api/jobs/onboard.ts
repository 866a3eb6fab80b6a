import { defineTask } from 'svcjs'
import * as v from 'valibot'

export const route = { kind: 'task', retries: 3 } as const
// Checked before a run is created: POST /__tasks/jobs.onboard answers 400 with the issues.
export const input = v.object({ email: v.pipe(v.string(), v.email()) })

export const POST = defineTask({
  input,
  handler: async (ctx) => {
    const account = await ctx.step.run('create-account', () => createAccount(ctx.input.email))
    await ctx.step.run('send-welcome', () => sendEmail(account.email, 'Welcome!'))
    // The run is suspended for a day, with its steps and timer kept in the
    // store. When it resumes, even in another process after a restart, the
    // handler runs again from the top: the steps above return their recorded
    // output instead of creating a second account or sending a second email.
    await ctx.step.sleep('wait-a-day', 24 * 60 * 60)
    await ctx.step.run('send-tips', () => sendEmail(account.email, 'Three things to try'))
    return { accountId: account.id }
  },
})

// Stand-ins for your database and your email provider.
async function createAccount(email: string) {
  return { id: crypto.randomUUID(), email }
}

async function sendEmail(to: string, subject: string) {
  console.log(`email to ${to}: ${subject}`)
  return { to, subject }
}
