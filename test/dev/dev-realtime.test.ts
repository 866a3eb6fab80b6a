// Realtime under `svc dev` with no task secret: createRunToken() in a route
// signs with a secret made for the dev process, and subscribeRun follows
// the run with that token; a token that process did not sign is refused.
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, expect, it } from 'vitest'
import { subscribeRun } from '../../src/client.ts'
import { signRunToken } from '../../src/runtime/admin/run-token.ts'
import { startDevServer, type DevServer } from '../../src/dev/server.ts'
import type { RunProgress } from '../../src/types.ts'
import { recordingLogger, write } from './_helpers.ts'

let root: string
let dev: DevServer | undefined
const secret = process.env.SVC_TASK_SECRET

beforeEach(async () => {
  delete process.env.SVC_TASK_SECRET
  root = await mkdtemp(join(tmpdir(), 'svc-dev-realtime-'))
  await write(
    root,
    'src/api/start.ts',
    `import { createRunToken, enqueue } from 'svcjs'
export async function POST() {
  const { runId } = await enqueue('jobs.work', {})
  return { id: runId, token: await createRunToken(runId) }
}
`,
  )
  await write(
    root,
    'src/api/jobs/work.ts',
    `export const route = { kind: 'task' } as const
export async function POST(ctx: any) {
  await ctx.step.run('a', () => 1)
  await ctx.step.sleep('nap', 0.2)
  return { done: true }
}
`,
  )
})
afterEach(async () => {
  await dev?.close()
  dev = undefined
  if (secret !== undefined) process.env.SVC_TASK_SECRET = secret
  await rm(root, { recursive: true, force: true })
})

it('createRunToken() in a route and subscribeRun follow a run with no SVC_TASK_SECRET; a token signed elsewhere is refused', async () => {
  dev = await startDevServer({ root, port: 0, host: '127.0.0.1', logger: recordingLogger(), watch: false })
  const started = await fetch(`${dev.url}/api/start`, { method: 'POST' })
  expect(started.status, await started.clone().text()).toBe(200)
  const { id, token } = (await started.json()) as { id: string; token: string }
  const updates: RunProgress[] = []
  const subscription = subscribeRun(`${dev.url}/__tasks/runs/${id}/stream`, { token, onUpdate: (run) => void updates.push(run) })
  const last = await subscription.closed
  expect(last).toMatchObject({ id, status: 'completed' })
  expect(updates.map((run) => run.status)).toContain('completed')

  const forged = await signRunToken(id, Math.floor(Date.now() / 1000) + 60, 'a-secret-this-process-never-made-0123456789')
  const refused = await fetch(`${dev.url}/__tasks/runs/${id}/stream?token=${encodeURIComponent(forged)}`)
  expect(refused.status).toBe(401)
})
