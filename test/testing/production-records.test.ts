/**
 * A run made by `svcjs/testing` is recorded as production records it: the
 * same task and input run under `svc dev` (a real server, the SQLite store,
 * real time) and under the kit (the memory store, virtual time) give the
 * same record once times, ids and the version `svc dev` derives from the
 * file are set aside.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { startDevServer, type DevServer } from '../../src/dev/server.ts'
import { createTestRuntime } from '../../src/testing.ts'
import type { RunRecord } from '../../src/types.ts'
import { recordingLogger, until, write } from '../dev/_helpers.ts'

const TASK = `export const route = { kind: 'task', retries: 1 } as const

export async function POST(ctx: any) {
  const order = await ctx.step.run('load', () => ({ id: ctx.input.orderId, lines: 2 }))
  ctx.log.info('loaded', { lines: order.lines })
  await ctx.stream('progress', { done: 1 })
  await ctx.step.sleep('cool-off', 1)
  const receipt = await ctx.step.run('receipt', () => ({ order: order.id, total: 42 }))
  return { receipt }
}
`

/** Keys whose values are times, ids or versions: they differ between any two runs. */
const VARYING = new Set([
  'id',
  'runId',
  'createdAt',
  'startedAt',
  'finishedAt',
  'durationMs',
  'at',
  'since',
  'attemptStarted',
  'version',
  'idempotencyKey',
])

function comparable(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(comparable)
  if (value === null || typeof value !== 'object') return value
  return Object.fromEntries(
    Object.entries(value)
      .filter(([key]) => !VARYING.has(key))
      .map(([key, inner]) => [key, comparable(inner)]),
  )
}

let root: string
let dev: DevServer
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'svc-kit-records-'))
  await write(root, 'src/api/jobs/checkout.ts', TASK)
  dev = await startDevServer({ root, port: 0, host: '127.0.0.1', logger: recordingLogger(), watch: false })
})
afterAll(async () => {
  await dev?.close()
  await rm(root, { recursive: true, force: true })
})

it('records a run as svc dev does, but for times, ids and the version', async () => {
  const started = await fetch(`${dev.url}/__tasks/jobs.checkout`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ orderId: 'o-7' }),
  })
  expect(started.status).toBe(202)
  const { id } = (await started.json()) as { id: string }
  let fromDev: RunRecord | undefined
  await until(async () => {
    fromDev = (await (await fetch(`${dev.url}/__tasks/runs/${id}`)).json()) as RunRecord
    return fromDev.status === 'completed'
  }, 10_000)

  const t = await createTestRuntime({ root })
  const fromKit = await t.run('jobs.checkout', { orderId: 'o-7' })
  await t.close()

  expect(fromKit.status).toBe('completed')
  expect(Object.keys(fromKit.steps)).toEqual(['load', 'cool-off', 'receipt'])
  expect(fromKit.logs).toMatchObject({ kept: [{ level: 'info', message: 'loaded', attributes: { lines: 2 } }] })
  expect(fromKit.chunks).toMatchObject({ kept: [{ name: 'progress', data: { done: 1 } }] })
  expect(comparable(fromKit)).toEqual(comparable(fromDev))
})
