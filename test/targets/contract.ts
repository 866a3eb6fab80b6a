/**
 * The contract every target keeps, run by each target's test file against
 * the targets app (test/fixtures/targets-app) as `svc build` made it. A
 * driver starts the built output on its platform, or the closest real thing
 * that runs here, and speaks to it only as the platform would: HTTP
 * requests, and the platform's own way of firing a cron schedule.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { pollRun } from './_app.ts'

/** The task secret a driver sets in the target's environment, where the platform keeps secrets. */
export const TASK_SECRET = 'contract-secret-0123456789abcdef01234'

/** How a cron firing ended, as the platform sees it. */
export interface CronOutcome {
  /** Whether the platform records the firing as a success. */
  ok: boolean
  /** What the platform shows for a failure (an error message, a log line), naming the failed task. */
  error?: string
}

export interface RunningTarget {
  /** Delivers `request` to the target as its platform would; only its path, query, method, headers and body count. */
  fetch(request: Request): Promise<Response>
  /** Fires the cron schedule `expression` as the platform's scheduler does, once the runs it starts have ended. */
  cron(expression: string): Promise<CronOutcome>
  close(): Promise<void>
}

export interface TargetDriver {
  name: string
  /** Starts the built targets app, with `SVC_TASK_SECRET` set to `TASK_SECRET`. */
  start(): Promise<RunningTarget>
}

/** The schedule of jobs.tick, which records its input where GET /api/ticks reads it. */
const TICK_CRON = '*/10 * * * *'
/** The schedule of jobs.import, which always fails, and of jobs.report, which succeeds. */
const NIGHTLY_CRON = '0 3 * * *'

type LastRuns = Record<string, string | undefined>

export function targetContract(driver: TargetDriver): void {
  describe(`the ${driver.name} target keeps the target contract`, () => {
    let target: RunningTarget

    beforeAll(async () => {
      target = await driver.start()
    })
    afterAll(() => target?.close())

    const request = (path: string, init?: RequestInit) => target.fetch(new Request(new URL(path, 'http://svc.test'), init))
    const admin = (path: string, init: RequestInit = {}) =>
      request(path, { ...init, headers: { authorization: `Bearer ${TASK_SECRET}`, ...(init.headers as Record<string, string>) } })
    const json = (body: unknown): RequestInit => ({
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    })
    const lastRuns = async (): Promise<LastRuns> => {
      const { tasks } = (await (await admin('/__tasks')).json()) as { tasks: Array<{ name: string; lastRun: { status: string } | null }> }
      return Object.fromEntries(tasks.map((task) => [task.name, task.lastRun?.status]))
    }
    const ticks = async () => ((await (await request('/api/ticks')).json()) as { ticks: unknown[] }).ticks

    it('answers a route with its path params and query', async () => {
      const res = await request('/api/users/42?tab=settings')
      expect(res.status).toBe(200)
      expect(res.headers.get('content-type')).toMatch(/^application\/json/)
      expect(await res.json()).toEqual({ id: '42', tab: 'settings' })
    })

    it('hands a route the JSON body and answers with the status it sets', async () => {
      const res = await request('/api/hello', json({ b: 2 }))
      expect(res.status).toBe(201)
      expect(await res.json()).toEqual({ echo: { b: 2 } })
    })

    it('renders a server page', async () => {
      const res = await request('/')
      expect(res.status).toBe(200)
      expect(await res.text()).toContain('<h1>targets app</h1>')
    })

    it('answers GET /__health without credentials', async () => {
      const res = await request('/__health')
      expect(res.status).toBe(200)
      expect(await res.json()).toEqual({ ok: true, framework: 'svc' })
    })

    it('answers an unknown path with 404 NOT_FOUND as JSON', async () => {
      const res = await request('/api/nowhere')
      expect(res.status).toBe(404)
      expect(res.headers.get('content-type')).toMatch(/^application\/json/)
      expect(await res.json()).toMatchObject({ code: 'NOT_FOUND', error: expect.any(String) })
    })

    it('answers a method the route lacks with 405 and the Allow header', async () => {
      const res = await request('/api/users/42', { method: 'DELETE' })
      expect(res.status).toBe(405)
      expect(res.headers.get('allow')).toBe('GET, HEAD')
      expect(await res.json()).toMatchObject({ code: 'METHOD_NOT_ALLOWED', error: expect.any(String) })
    })

    it('answers a body that fails the route schema with 400 VALIDATION_FAILED and its details', async () => {
      const res = await request('/api/signup', json({ email: 42 }))
      expect(res.status).toBe(400)
      expect(await res.json()).toMatchObject({
        code: 'VALIDATION_FAILED',
        error: expect.any(String),
        details: [{ target: 'body', path: ['email'], message: 'email must be a string' }],
      })
      // The same route runs its handler for a body that passes.
      expect(await (await request('/api/signup', json({ email: 'a@example.com' }))).json()).toEqual({ signedUp: 'a@example.com' })
    })

    it('refuses the admin surface without the secret: 401 UNAUTHORIZED with WWW-Authenticate: Bearer', async () => {
      for (const headers of [{}, { authorization: 'Bearer not-the-secret' }] as Array<Record<string, string>>) {
        const res = await request('/__tasks', { headers })
        expect(res.status).toBe(401)
        expect(res.headers.get('www-authenticate')).toMatch(/^Bearer/)
        expect(await res.json()).toMatchObject({ code: 'UNAUTHORIZED', error: expect.stringMatching(/SECRET/) })
      }
      const start = await request('/__tasks/jobs.double', json({ n: 1 }))
      expect(start.status).toBe(401)
    })

    it('starts a task with POST /__tasks/<name> (202 { id, status }) and reads the run on GET /__tasks/<id> until it completes with its result', async () => {
      const res = await admin('/__tasks/jobs.double', json({ n: 21 }))
      expect(res.status).toBe(202)
      const started = (await res.json()) as { id: string; status: string }
      expect(started).toEqual({ id: expect.any(String), status: expect.stringMatching(/^(running|completed)$/) })
      const run = await pollRun((id) => admin(`/__tasks/${id}`), started.id)
      expect(run).toMatchObject({
        id: started.id,
        taskName: 'jobs.double',
        status: 'completed',
        ok: true,
        result: { doubled: 42 },
        steps: { double: { status: 'completed', output: 42 } },
      })
    })

    it('lists runs newest first on GET /__tasks/runs, replays one with POST /__tasks/runs/<id>/replay, and refuses to cancel a finished run', async () => {
      const started = (await (await admin('/__tasks/jobs.double', json({ n: 5 }))).json()) as { id: string }
      await pollRun((id) => admin(`/__tasks/${id}`), started.id)
      const list = await admin('/__tasks/runs?task=jobs.double&status=completed&limit=1')
      expect(list.status).toBe(200)
      const { runs } = (await list.json()) as { runs: unknown[] }
      expect(runs).toEqual([
        expect.objectContaining({ id: started.id, taskName: 'jobs.double', status: 'completed', attempts: 1, ok: true }),
      ])
      const replay = await admin(`/__tasks/runs/${started.id}/replay`, { method: 'POST' })
      expect(replay.status).toBe(202)
      const { id } = (await replay.json()) as { id: string }
      expect(await pollRun((runId) => admin(`/__tasks/${runId}`), id)).toMatchObject({
        status: 'completed',
        trigger: 'replay',
        replayOf: started.id,
        result: { doubled: 10 },
      })
      const finished = await admin(`/__tasks/runs/${started.id}/cancel`, { method: 'POST' })
      expect(finished.status).toBe(409)
      expect(await finished.json()).toMatchObject({ code: 'RUN_FINISHED' })
      const unknown = await admin('/__tasks/runs/no-such-run/cancel', { method: 'POST' })
      expect(unknown.status).toBe(404)
      expect(await unknown.json()).toMatchObject({ code: 'RUN_NOT_FOUND' })
      expect((await request('/__tasks/runs')).status).toBe(401)
    })

    it('answers a task payload that fails the task input schema with 400 VALIDATION_FAILED', async () => {
      const res = await admin('/__tasks/jobs.double', json({ n: 'x' }))
      expect(res.status).toBe(400)
      expect(await res.json()).toMatchObject({ code: 'VALIDATION_FAILED', details: [{ path: ['n'], message: 'n must be a number' }] })
    })

    it("checks an event's data against the app's schema in src/events.ts: 400 VALIDATION_FAILED, else the run gets what the schema outputs", async () => {
      const bad = await admin('/__events/order.paid', json({ orderId: 7 }))
      expect(bad.status).toBe(400)
      expect(await bad.json()).toMatchObject({
        code: 'VALIDATION_FAILED',
        details: [{ path: ['orderId'], message: 'orderId must be a string' }],
      })
      const res = await admin('/__events/order.paid', json({ orderId: 'o-1' }))
      expect(res.status).toBe(202)
      const sent = (await res.json()) as { runs: Array<{ id: string; taskName: string }> }
      expect(sent.runs.map((run) => run.taskName)).toEqual(['jobs.paid'])
      expect(await pollRun((id) => admin(`/__tasks/${id}`), sent.runs[0].id)).toMatchObject({
        status: 'completed',
        trigger: 'event',
        result: { orderId: 'o-1', checked: true },
      })
    })

    it('lists the tasks with their schedules on GET /__tasks', async () => {
      const res = await admin('/__tasks')
      expect(res.status).toBe(200)
      const { tasks } = (await res.json()) as { tasks: Array<{ name: string; path: string; schedule: string | null }> }
      expect(tasks.map((task) => task.name).sort()).toEqual([
        'jobs.double',
        'jobs.fail',
        'jobs.import',
        'jobs.nap',
        'jobs.paid',
        'jobs.report',
        'jobs.slow',
        'jobs.tick',
      ])
      expect(tasks.find((task) => task.name === 'jobs.tick')).toMatchObject({
        path: '/api/jobs/tick',
        schedule: TICK_CRON,
        retries: 0,
        timeout: 30000,
      })
    })

    it('runs the scheduled task when its cron fires, and reports success', async () => {
      const before = await ticks()
      expect(await target.cron(TICK_CRON)).toEqual({ ok: true })
      expect(await ticks()).toEqual([...before, { _cron: true }])
      expect((await lastRuns())['jobs.tick']).toBe('completed')
    })

    it('runs nothing for a cron no task uses, and reports success', async () => {
      const before = await lastRuns()
      const ticksBefore = await ticks()
      expect(await target.cron('0 0 1 1 *')).toEqual({ ok: true })
      expect(await lastRuns()).toEqual(before)
      expect(await ticks()).toEqual(ticksBefore)
    })

    it('reports a cron firing whose task fails as a failure to the platform, naming the task, and still runs the others', async () => {
      const outcome = await target.cron(NIGHTLY_CRON)
      expect(outcome.ok).toBe(false)
      expect(outcome.error).toMatch(/jobs\.import.*the nightly import failed/)
      expect(outcome.error).not.toContain('jobs.report')
      const runs = await lastRuns()
      expect({ import: runs['jobs.import'], report: runs['jobs.report'] }).toEqual({ import: 'failed', report: 'completed' })
    })
  })
}
