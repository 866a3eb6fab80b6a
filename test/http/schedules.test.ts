/**
 * Runtime schedules on the task admin surface, over a real server on port
 * 0 with the task secret: made, found, changed, paused, run now, backfilled
 * and removed over HTTP, with a clear 4xx for each mistake.
 */
import * as v from 'valibot'
import { describe, expect, it } from 'vitest'
import { MemoryRunStore, type RunRecord, type RuntimeApiRoute, type TaskContext } from '../../src/index.ts'
import { serve, until } from './_helpers.ts'

const SECRET = 's3cret-0123456789abcdef0123456789ab'
const AUTH = { authorization: `Bearer ${SECRET}` }

const ROUTES: RuntimeApiRoute[] = [
  {
    path: '/api/reports/send',
    module: {
      kind: 'task',
      input: v.object({ tenant: v.string() }),
      POST: (ctx: TaskContext<{ tenant: string }>) => ({ sent: ctx.input.tenant }),
    },
  },
]

type Server = Awaited<ReturnType<typeof serve>>

const start = () => serve({ apiRoutes: ROUTES, env: { NODE_ENV: 'production', SVC_TASK_SECRET: SECRET }, store: new MemoryRunStore() })

async function call(server: Server, method: string, path: string, body?: unknown, headers: Record<string, string> = AUTH) {
  const res = await fetch(`${server.url}${path}`, {
    method,
    headers: body === undefined ? headers : { ...headers, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  return { status: res.status, body: await res.json() }
}

describe('runtime schedules over HTTP', () => {
  it('makes, finds, changes, pauses, runs now, backfills and removes a schedule', async () => {
    const server = await start()
    const made = await call(server, 'POST', '/__tasks/reports.send/schedules', {
      cron: '0 9 * * 1',
      input: { tenant: 'acme' },
      key: 'acme',
    })
    expect(made.status).toBe(201)
    expect(made.body).toMatchObject({ task: 'reports.send', cron: '0 9 * * 1', key: 'acme', enabled: true, nextAt: expect.any(String) })
    const id = made.body.id as string
    // The same key again: that schedule, changed, answered 200.
    const again = await call(server, 'POST', '/__tasks/reports.send/schedules', {
      cron: '0 10 * * 1',
      input: { tenant: 'acme' },
      key: 'acme',
    })
    expect(again).toMatchObject({ status: 200, body: { id, cron: '0 10 * * 1' } })
    expect(await call(server, 'GET', '/__tasks/schedules?key=acme')).toMatchObject({ status: 200, body: { schedules: [{ id }] } })
    expect(await call(server, 'GET', `/__tasks/schedules/${id}`)).toMatchObject({ status: 200, body: { id } })
    expect(await call(server, 'PATCH', `/__tasks/schedules/${id}`, { timezone: 'Europe/Paris' })).toMatchObject({
      status: 200,
      body: { timezone: 'Europe/Paris' },
    })
    expect(await call(server, 'POST', `/__tasks/schedules/${id}/pause`)).toMatchObject({
      status: 200,
      body: { enabled: false, nextAt: null },
    })
    expect(await call(server, 'POST', `/__tasks/schedules/${id}/resume`)).toMatchObject({ status: 200, body: { enabled: true } })

    const now = await call(server, 'POST', `/__tasks/schedules/${id}/trigger`)
    expect(now).toMatchObject({ status: 202, body: { tick: expect.any(String), runId: expect.any(String) } })
    const run = await until(async () => {
      const read = await call(server, 'GET', `/__tasks/${now.body.runId}`)
      return read.body.status === 'completed' ? (read.body as RunRecord) : undefined
    })
    expect(run).toMatchObject({ trigger: 'cron', schedule: { id, tick: now.body.tick }, result: { sent: 'acme' } })

    const back = await call(server, 'POST', `/__tasks/schedules/${id}/backfill`, {
      from: '2026-01-05T00:00:00Z',
      to: '2026-01-20T00:00:00Z',
    })
    // Mondays at 10:00 in Paris, 09:00 UTC in January.
    expect(back.status).toBe(202)
    expect(back.body.runs.map((r: { tick: string }) => r.tick)).toEqual([
      '2026-01-05T09:00:00.000Z',
      '2026-01-12T09:00:00.000Z',
      '2026-01-19T09:00:00.000Z',
    ])

    expect(await call(server, 'DELETE', `/__tasks/schedules/${id}`)).toEqual({ status: 200, body: { id, deleted: true } })
    expect(await call(server, 'GET', `/__tasks/schedules/${id}`)).toMatchObject({ status: 404, body: { code: 'SCHEDULE_NOT_FOUND' } })
    expect(await call(server, 'DELETE', `/__tasks/schedules/${id}`)).toMatchObject({ status: 404 })
  })

  it('answers each mistake with a 4xx that names it, and keeps nothing', async () => {
    const server = await start()
    const cases: [string, string, unknown, number, string][] = [
      ['POST', '/__tasks/reports.sned/schedules', { cron: '0 * * * *' }, 404, 'TASK_NOT_FOUND'],
      ['POST', '/__tasks/reports.send/schedules', { cron: 'hourly', input: { tenant: 'a' } }, 400, 'INVALID_SCHEDULE'],
      ['POST', '/__tasks/reports.send/schedules', { cron: '0 * * * *', input: { tenant: 7 } }, 400, 'VALIDATION_FAILED'],
      ['POST', '/__tasks/reports.send/schedules', [1], 400, 'INVALID_SCHEDULE'],
      ['POST', '/__tasks/reports.send/schedules', { cron: '0 * * * *', every: 'hour' }, 400, 'INVALID_SCHEDULE'],
      ['GET', '/__tasks/schedules/nope', undefined, 404, 'SCHEDULE_NOT_FOUND'],
      ['POST', '/__tasks/schedules/nope/pause', undefined, 404, 'SCHEDULE_NOT_FOUND'],
      ['POST', '/__tasks/schedules/nope/stop', undefined, 404, 'NOT_FOUND'],
      ['PUT', '/__tasks/schedules/nope', {}, 405, 'METHOD_NOT_ALLOWED'],
    ]
    for (const [method, path, body, status, code] of cases) {
      const answer = await call(server, method, path, body)
      expect([method, path, answer.status, answer.body.code]).toEqual([method, path, status, code])
    }
    expect((await call(server, 'GET', '/__tasks/schedules')).body).toEqual({ schedules: [] })
    // Without the secret, nothing.
    expect((await call(server, 'GET', '/__tasks/schedules', undefined, {})).status).toBe(401)
    expect((await call(server, 'POST', '/__tasks/reports.send/schedules', { cron: '0 * * * *', input: { tenant: 'a' } }, {})).status).toBe(
      401,
    )
  })
})
