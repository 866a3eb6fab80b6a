// A task that waits for a person: it hands out a link, and the first visit to it approves.
// Start it with POST /__tasks/approvals.request {"what":"deploy"}; the link is in the
// run's metadata (approveUrl) and its log. A visit may say who: <link>?by=ada
import * as v from 'valibot'
import type { TaskContext } from 'svcjs'

export const route = { kind: 'task', timeout: 10_000 } as const

export const input = v.object({ what: v.pipe(v.string(), v.minLength(1)) })

export async function POST(ctx: TaskContext<{ what: string }>) {
  // A replay makes the same link; setting and logging it again changes nothing.
  const approved = await ctx.step.createCallback('approved', { timeoutSeconds: 24 * 60 * 60, method: 'GET' })
  await ctx.metadata.set('approveUrl', approved.url)
  ctx.log.info(`Approve ${ctx.input.what}: ${approved.url}`, { expiresAt: approved.expiresAt })
  const answer = await approved.wait()
  if ('timedOut' in answer) return { approved: false, reason: 'timed out' }
  const { by } = (answer.body ?? {}) as { by?: unknown }
  return { approved: true, by: typeof by === 'string' ? by : null }
}
