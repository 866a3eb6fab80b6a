/**
 * `POST /__tasks/runs/<id>/wake` and `POST /__tasks/<name>/fire`: through
 * `createSvcHandler` in production, with the task secret and without it,
 * and through a development server on port 0, which needs none.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { createSvcHandler, type RunRecord, type RuntimeApiRoute, type SvcHandler, type TaskContext, tokenIdFor } from '../../src/index.ts'
import { adminRoutePattern } from '../../src/runtime/admin/route-pattern.ts'
import { recordingLogger } from '../tasks/_helpers.ts'
import { serve, until } from './_helpers.ts'

const SECRET = 's3cret-0123456789abcdef0123456789ab'
const DAY = 86_400

function routes(): RuntimeApiRoute[] {
  return [
    {
      path: '/api/nap',
      module: {
        kind: 'task',
        POST: async (ctx: TaskContext) => {
          await ctx.step.sleep('nap', DAY)
          return 'rested'
        },
      },
    },
    { path: '/api/approve', module: { kind: 'task', POST: (ctx: TaskContext) => ctx.step.waitForToken('ok') } },
    { path: '/api/report', module: { kind: 'task', schedule: '0 3 * * *', POST: async () => 'reported' } },
    { path: '/api/plain', module: { kind: 'task', POST: async () => 'plain' } },
  ]
}

const handlers: SvcHandler[] = []
afterEach(async () => {
  for (const handler of handlers.splice(0)) await handler.runtime?.close()
})

function production(): SvcHandler {
  const handler = createSvcHandler({
    routes: routes(),
    env: { NODE_ENV: 'production', SVC_TASK_SECRET: SECRET },
    logger: recordingLogger(),
  })
  handlers.push(handler)
  return handler
}

/** A POST with the task secret, or with none (`secret: null`). */
function post(handler: SvcHandler, path: string, secret: string | null = SECRET): Promise<Response> {
  const headers: Record<string, string> = secret === null ? {} : { authorization: `Bearer ${secret}` }
  return handler.fetch(new Request(`http://svc${path}`, { method: 'POST', headers }))
}

async function reached(handler: SvcHandler, id: string, status: RunRecord['status']): Promise<RunRecord> {
  return until(async () => {
    const run = await handler.runtime!.getRun(id)
    return run?.status === status ? run : undefined
  })
}

describe('POST /__tasks/runs/<id>/wake', () => {
  it('wakes a sleeping run with the task secret: 200 { id, status }, and the run goes on now', async () => {
    const handler = production()
    const { id } = (await (await post(handler, '/__tasks/nap')).json()) as { id: string }
    await reached(handler, id, 'suspended')

    const refused = await post(handler, `/__tasks/runs/${id}/wake`, null)
    expect(refused.status).toBe(401)
    expect((await refused.json()).code).toBe('UNAUTHORIZED')
    expect((await handler.runtime!.getRun(id))?.status).toBe('suspended')

    const res = await post(handler, `/__tasks/runs/${id}/wake`)
    expect(res.status).toBe(200)
    expect(await res.json()).toEqual({ id, status: 'suspended' })
    const run = await reached(handler, id, 'completed')
    expect(run.result).toBe('rested')
    expect(run.steps.nap).toMatchObject({ status: 'completed', kind: 'sleep' })
  })

  it('answers 409 RUN_NOT_SLEEPING naming the token, 409 RUN_FINISHED, 404 RUN_NOT_FOUND and 405 on GET', async () => {
    const handler = production()
    const { id } = (await (await post(handler, '/__tasks/approve')).json()) as { id: string }
    await reached(handler, id, 'suspended')
    const waiting = await post(handler, `/__tasks/runs/${id}/wake`)
    expect(waiting.status).toBe(409)
    const body = await waiting.json()
    expect(body.code).toBe('RUN_NOT_SLEEPING')
    expect(body.error).toContain(`token "${tokenIdFor(id, 'ok')}"`)

    await handler.runtime!.completeToken(tokenIdFor(id, 'ok'), 'yes')
    await reached(handler, id, 'completed')
    const finished = await post(handler, `/__tasks/runs/${id}/wake`)
    expect(finished.status).toBe(409)
    expect((await finished.json()).code).toBe('RUN_FINISHED')

    const unknown = await post(handler, '/__tasks/runs/no-such-run/wake')
    expect(unknown.status).toBe(404)
    expect((await unknown.json()).code).toBe('RUN_NOT_FOUND')

    const read = await handler.fetch(new Request(`http://svc/__tasks/runs/${id}/wake`, { headers: { authorization: `Bearer ${SECRET}` } }))
    expect(read.status).toBe(405)
    expect(read.headers.get('allow')).toBe('POST')
  })
})

describe('POST /__tasks/<name>/fire', () => {
  it('starts a run of a scheduled task now with the task secret: 202 { id, status }, a cron run', async () => {
    const handler = production()
    expect((await post(handler, '/__tasks/report/fire', null)).status).toBe(401)
    expect(await handler.runtime!.listRuns()).toEqual([])

    const res = await post(handler, '/__tasks/report/fire')
    expect(res.status).toBe(202)
    const { id, status } = (await res.json()) as { id: string; status: string }
    expect(status).toBe('running')
    const run = await reached(handler, id, 'completed')
    expect(run).toMatchObject({ taskName: 'report', trigger: 'cron', input: { _cron: true }, result: 'reported' })
  })

  it('answers 400 NOT_SCHEDULED for a task without a schedule, 404 TASK_NOT_FOUND and 405 on GET', async () => {
    const handler = production()
    const plain = await post(handler, '/__tasks/plain/fire')
    expect(plain.status).toBe(400)
    const body = await plain.json()
    expect(body.code).toBe('NOT_SCHEDULED')
    expect(body.error).toContain('POST /__tasks/plain')
    const unknown = await post(handler, '/__tasks/nope/fire')
    expect(unknown.status).toBe(404)
    expect((await unknown.json()).code).toBe('TASK_NOT_FOUND')
    const read = await handler.fetch(new Request('http://svc/__tasks/report/fire', { headers: { authorization: `Bearer ${SECRET}` } }))
    expect(read.status).toBe(405)
  })
})

describe('in development', () => {
  it('a local request wakes a run and fires a schedule without a secret', async () => {
    const server = await serve({ apiRoutes: routes(), env: { NODE_ENV: 'development' } })
    const send = (path: string) => fetch(`${server.url}${path}`, { method: 'POST' })
    const { id } = (await (await send('/__tasks/nap')).json()) as { id: string }
    const record = async (runId: string) => (await (await fetch(`${server.url}/__tasks/${runId}`)).json()) as RunRecord
    await until(async () => (await record(id)).status === 'suspended')
    expect((await send(`/__tasks/runs/${id}/wake`)).status).toBe(200)
    await until(async () => (await record(id)).status === 'completed')

    const fired = await send('/__tasks/report/fire')
    expect(fired.status).toBe(202)
    const { id: cronId } = (await fired.json()) as { id: string }
    expect((await record(cronId)).trigger).toBe('cron')
  })
})

describe('the route patterns of their spans', () => {
  it('name neither the run nor the task', () => {
    expect(adminRoutePattern('POST', '/__tasks/runs/0195f3a2-7c1e-7b4a-9f00-5d8e2c1a4b6d/wake')).toBe('/__tasks/runs/{id}/wake')
    expect(adminRoutePattern('POST', '/__tasks/reports.daily/fire')).toBe('/__tasks/{name}/fire')
  })
})
