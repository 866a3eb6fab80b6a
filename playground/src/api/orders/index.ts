// POST /api/orders places an order: it starts jobs.fulfil and answers with the run to follow.
// The run token lets the order page read that run's progress and nothing else; without
// SVC_TASK_SECRET (in development) there is none, and the page reads it as the developer.
import { createRunToken, enqueue } from 'svcjs'

export async function POST() {
  const orderId = `order-${crypto.randomUUID().slice(0, 8)}`
  const { runId } = await enqueue('jobs.fulfil', { orderId })
  const token = process.env.SVC_TASK_SECRET ? await createRunToken(runId, { expiresIn: 15 * 60 }) : null
  return { orderId, runId, token }
}
