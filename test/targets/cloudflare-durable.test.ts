/**
 * Durable runs on Cloudflare Workers: the built worker of the durable app
 * (test/fixtures/durable-app) in real workerd, configured from the generated
 * wrangler.json with its Durable Object storage in a temp dir. A restart is
 * `mf.dispose()` and a new Miniflare on the same directory: the isolate, its
 * memory and its in-process timers are gone; the object's SQLite storage and
 * its alarm remain.
 *
 * Side effects are counted by a real HTTP server the tasks call, so a step
 * that ran twice shows, and an alarm that wakes the object is seen without
 * any request to the worker.
 */
import { createServer, type Server } from 'node:http'
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises'
import { DatabaseSync } from 'node:sqlite'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Readable } from 'node:stream'
import { Miniflare, type MiniflareOptions } from 'miniflare'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fileURLToPath } from 'node:url'
import { buildApp } from '../../src/build/build.ts'
import { createRunToken } from '../../src/index.ts'
import { bundle } from '../../src/build/bundle.ts'
import { copyFixtureApp, pollRun, waitForOutput } from './_app.ts'
import { wranglerDryRun } from './_wrangler.ts'

const SECRET = 'durable-secret-0123456789abcdef01234'

interface Hit {
  what: string
  body: any
  /** How many restarts had begun when it arrived. */
  restarts: number
}

/**
 * The HTTP server the fixture's tasks notify; answers `{ seen }`: how often
 * it heard this of this run. The first `hang` of a run is never answered.
 */
async function notifyServer(): Promise<{ url: string; hits: Hit[]; close: () => Promise<void>; state: { restarts: number } }> {
  const hits: Hit[] = []
  const held: Array<() => void> = []
  const state = { restarts: 0 }
  const server: Server = createServer((req, res) => {
    let text = ''
    req.on('data', (chunk) => (text += chunk))
    req.on('end', () => {
      const what = (req.url ?? '/').slice(1)
      const body = text ? JSON.parse(text) : {}
      hits.push({ what, body, restarts: state.restarts })
      const seen = hits.filter((hit) => hit.what === what && hit.body.runId === body.runId).length
      const reply = () => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ seen }))
      if (what === 'hang' && seen === 1) held.push(reply)
      else reply()
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as { port: number }
  return {
    url: `http://127.0.0.1:${port}`,
    hits,
    state,
    close: () => {
      for (const reply of held) reply()
      server.closeAllConnections()
      return new Promise((resolve) => server.close(() => resolve()))
    },
  }
}

async function until<T>(what: string, check: () => T | undefined | false, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const value = check()
    if (value) return value
    if (Date.now() > deadline) throw new Error(`${what}: not seen after ${timeoutMs} ms`)
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

describe('durable runs on cloudflare: the SvcTasks Durable Object', () => {
  let app: Awaited<ReturnType<typeof copyFixtureApp>>
  let out: string
  let persist: string
  let notify: Awaited<ReturnType<typeof notifyServer>>
  let mf: Miniflare
  let output = ''

  async function start(): Promise<void> {
    const { unstable_getMiniflareWorkerOptions } = await import('wrangler')
    const { workerOptions, main } = unstable_getMiniflareWorkerOptions(join(out, 'wrangler.json'))
    mf = new Miniflare({
      ...(workerOptions as object),
      scriptPath: main!,
      modulesRoot: out,
      modules: true,
      // Callback URLs name the address the test reaches the worker at.
      bindings: { SVC_TASK_SECRET: SECRET, SVC_PUBLIC_URL: 'http://worker' },
      durableObjectsPersist: persist,
      handleRuntimeStdio(stdout: Readable, stderr: Readable) {
        stdout.on('data', (chunk: Buffer) => (output += chunk))
        stderr.on('data', (chunk: Buffer) => (output += chunk))
      },
    } as MiniflareOptions)
    await mf.ready
  }

  /** Stops workerd (the isolate and every in-process timer with it) and starts a new one on the same storage. */
  async function restart(pauseMs = 0): Promise<void> {
    await mf.dispose()
    notify.state.restarts++
    if (pauseMs > 0) await sleep(pauseMs)
    await start()
  }

  async function admin(
    path: string,
    init: { method?: string; body?: unknown; headers?: Record<string, string> } = {},
  ): Promise<{ status: number; body: any }> {
    const res = await mf.dispatchFetch(`http://worker${path}`, {
      method: init.method ?? (init.body === undefined ? 'GET' : 'POST'),
      headers: { authorization: `Bearer ${SECRET}`, 'content-type': 'application/json', ...init.headers },
      body: init.body === undefined ? undefined : JSON.stringify(init.body),
    })
    return { status: res.status, body: await res.json() }
  }

  const run = (id: string) => admin(`/__tasks/${encodeURIComponent(id)}`).then((res) => res.body)
  const waitForStatus = (id: string, status: string) =>
    (async () => {
      for (let i = 0; ; i++) {
        const current = await run(id)
        if (current.status === status) return current
        if (i > 600) throw new Error(`run ${id} is ${current.status}, never ${status}`)
        await sleep(25)
      }
    })()
  const hitsOf = (what: string, runId: string) => notify.hits.filter((hit) => hit.what === what && hit.body.runId === runId)

  beforeAll(async () => {
    app = await copyFixtureApp('durable-app')
    await buildApp({ root: app.root, target: 'cloudflare' })
    out = join(app.root, '.output/cloudflare')
    persist = await mkdtemp(join(tmpdir(), 'svc-do-'))
    notify = await notifyServer()
    await start()
  })
  afterAll(async () => {
    await mf?.dispose()
    await notify?.close()
    await app?.cleanup()
    if (persist) await rm(persist, { recursive: true, force: true })
  })

  it('declares the SVC_TASKS binding and a SQLite migration for SvcTasks in wrangler.json', async () => {
    const wrangler = JSON.parse(await readFile(join(out, 'wrangler.json'), 'utf8'))
    expect(wrangler.durable_objects).toEqual({ bindings: [{ name: 'SVC_TASKS', class_name: 'SvcTasks' }] })
    expect(wrangler.migrations).toEqual([{ tag: 'v1', new_sqlite_classes: ['SvcTasks'] }])
  })

  it('is accepted by wrangler deploy with the Durable Object binding and migration', async () => {
    const dry = await wranglerDryRun(out)
    try {
      expect(dry.code, dry.output).toBe(0)
      expect(dry.output).toMatch(/env\.SVC_TASKS \(SvcTasks\)/)
      expect(await readFile(join(dry.outdir, 'index.mjs'))).toEqual(await readFile(join(out, 'index.mjs')))
    } finally {
      await dry.cleanup()
    }
  })

  it('a run sleeping across a restart is woken by the alarm and completes, and its first step ran once; a replay from its last step keeps the others', async () => {
    const started = await admin('/__tasks/jobs.steps', { body: { notify: notify.url } })
    expect(started.status).toBe(202)
    const id = started.body.id as string
    const suspended = await waitForStatus(id, 'suspended')
    expect(suspended.suspended).toMatchObject({ stepKey: 's', waitpoint: { type: 'sleep' } })
    // Down until the sleep is over: nothing in memory survives, only storage and the alarm.
    await restart(Math.max(0, Date.parse(suspended.suspended.waitpoint.until) - Date.now()))
    // No request reaches the worker: only the alarm can wake the object to run step b.
    await until('step b after the restart', () => hitsOf('b', id).length > 0)
    const done = await waitForStatus(id, 'completed')
    expect(done.result).toEqual({ a: 1, b: 1 })
    expect(done.steps).toMatchObject({ a: { status: 'completed' }, s: { status: 'completed' }, b: { status: 'completed' } })
    expect(hitsOf('a', id)).toHaveLength(1)
    expect(hitsOf('b', id)).toEqual([expect.objectContaining({ restarts: notify.state.restarts })])

    // Replayed from b: step a and the sleep come from the record, b runs anew.
    const replay = await admin(`/__tasks/runs/${id}/replay`, { body: { fromStep: 'b' } })
    expect(replay.status).toBe(202)
    const replayed = await waitForStatus(replay.body.id, 'completed')
    expect(Object.keys(replayed.steps)).toEqual(['a', 's', 'b'])
    expect([replayed.steps.a, replayed.steps.s]).toEqual([done.steps.a, done.steps.s])
    expect([hitsOf('a', replay.body.id), hitsOf('b', replay.body.id)]).toEqual([[], [expect.anything()]])
    const typo = await admin(`/__tasks/runs/${id}/replay`, { body: { fromStep: 'c' } })
    expect(typo).toMatchObject({ status: 400, body: { code: 'STEP_NOT_RECORDED' } })
  })

  it('fails runs whose deadline passed while the worker was down with DEADLINE_EXCEEDED, maxDuration and Svc-Deadline alike', async () => {
    const bounded = await admin('/__tasks/jobs.bounded', { body: {} })
    // A deadline from the Svc-Deadline header, on a task without maxDuration.
    const deadline = new Date(Date.now() + 1000).toISOString()
    const headed = await admin('/__tasks/jobs.approval', { body: {}, headers: { 'svc-deadline': deadline } })
    expect([bounded.status, headed.status]).toEqual([202, 202])
    await waitForStatus(bounded.body.id, 'suspended')
    expect((await waitForStatus(headed.body.id, 'suspended')).deadline).toBe(deadline)
    await restart(1500)
    for (const id of [bounded.body.id, headed.body.id]) {
      const failed = await waitForStatus(id, 'failed')
      expect(failed.attempts.at(-1)).toMatchObject({ code: 'DEADLINE_EXCEEDED' })
    }
    const bad = await admin('/__tasks/jobs.approval', { body: {}, headers: { 'svc-deadline': 'soon' } })
    expect(bad).toMatchObject({ status: 400, body: { code: 'INVALID_OPTIONS' } })
  })

  it('a token completed over HTTP after a restart resumes its run with the payload', async () => {
    const { body } = await admin('/__tasks/jobs.approval', { body: {} })
    const id = body.id as string
    const suspended = await waitForStatus(id, 'suspended')
    const tokenId = suspended.suspended.waitpoint.tokenId as string
    await restart()
    const completed = await admin(`/__tasks/tokens/${encodeURIComponent(tokenId)}`, { body: { by: 'ops' } })
    expect(completed).toEqual({ status: 200, body: { ok: true, status: 'completed' } })
    expect((await waitForStatus(id, 'completed')).result).toEqual({ approved: { by: 'ops' } })
    // The same token again is 409, and an unknown one 404, as on Node.
    expect((await admin(`/__tasks/tokens/${encodeURIComponent(tokenId)}`, { body: {} })).status).toBe(409)
    expect((await admin('/__tasks/tokens/nobody%3Awaits', { body: {} })).status).toBe(404)
  })

  it('cancels a sleeping run in the object: it stays cancelled across a restart and its sleep never wakes it', async () => {
    const started = await admin('/__tasks/jobs.steps', { body: { notify: notify.url } })
    const id = started.body.id as string
    const suspended = await waitForStatus(id, 'suspended')
    expect(await admin(`/__tasks/runs/${id}/cancel`, { method: 'POST' })).toEqual({
      status: 200,
      body: { id, status: 'cancelled', cancelledWith: [] },
    })
    expect(await admin(`/__tasks/runs/${id}/cancel`, { method: 'POST' })).toMatchObject({ status: 409, body: { code: 'RUN_FINISHED' } })
    expect(await admin('/__tasks/runs/no-such-run/cancel', { method: 'POST' })).toMatchObject({
      status: 404,
      body: { code: 'RUN_NOT_FOUND' },
    })
    // Down past the sleep's due time: no alarm or timer of the run is left to wake it.
    await restart(Math.max(0, Date.parse(suspended.suspended.waitpoint.until) - Date.now()) + 500)
    const after = await run(id)
    expect(after).toMatchObject({ status: 'cancelled', ok: false, steps: { a: { status: 'completed' } } })
    expect(hitsOf('b', id)).toEqual([])
  })

  it('cancels a parent with the child run it waits on, in the object', async () => {
    const started = await admin('/__tasks/jobs.supervise', { body: {} })
    const parent = await waitForStatus(started.body.id as string, 'suspended')
    const child = parent.suspended.waitpoint.runId as string
    await waitForStatus(child, 'suspended')
    expect(await admin(`/__tasks/runs/${parent.id}/cancel`, { method: 'POST' })).toEqual({
      status: 200,
      body: { id: parent.id, status: 'cancelled', cancelledWith: [child] },
    })
    expect(await run(child)).toMatchObject({ status: 'cancelled' })
  })

  it('wakes a sleeping run in the object, which goes on before its sleep is over, and fires a schedule now', async () => {
    const started = await admin('/__tasks/jobs.steps', { body: { notify: notify.url } })
    const id = started.body.id as string
    const suspended = await waitForStatus(id, 'suspended')
    expect(await admin(`/__tasks/runs/${id}/wake`, { method: 'POST' })).toEqual({ status: 200, body: { id, status: 'suspended' } })
    const done = await waitForStatus(id, 'completed')
    expect(Date.parse(done.finishedAt)).toBeLessThan(Date.parse(suspended.suspended.waitpoint.until))
    expect(done.steps.s).toMatchObject({ status: 'completed', kind: 'sleep' })
    expect(hitsOf('a', id)).toHaveLength(1)
    expect(await admin(`/__tasks/runs/${id}/wake`, { method: 'POST' })).toMatchObject({ status: 409, body: { code: 'RUN_FINISHED' } })

    const approval = await admin('/__tasks/jobs.approval', { body: {} })
    await waitForStatus(approval.body.id, 'suspended')
    expect(await admin(`/__tasks/runs/${approval.body.id}/wake`, { method: 'POST' })).toMatchObject({
      status: 409,
      body: { code: 'RUN_NOT_SLEEPING' },
    })
    await admin(`/__tasks/runs/${approval.body.id}/cancel`, { method: 'POST' })

    const fired = await admin('/__tasks/jobs.nightly/fire', { method: 'POST' })
    expect(fired.status).toBe(202)
    expect(await waitForStatus(fired.body.id, 'completed')).toMatchObject({ trigger: 'cron', result: { input: { _cron: true } } })
    expect(await admin('/__tasks/jobs.steps/fire', { method: 'POST' })).toMatchObject({ status: 400, body: { code: 'NOT_SCHEDULED' } })
  })

  it('keeps runtime schedules in the object: run now and backfilled, and a tick that came due while the worker was down fires once at restart', async () => {
    // Once a year: no tick of its own comes due while the test runs.
    const made = await admin('/__tasks/jobs.nightly/schedules', { body: { cron: '0 0 1 1 *', input: { tenant: 'acme' }, key: 'acme' } })
    expect(made).toMatchObject({ status: 201, body: { task: 'jobs.nightly', enabled: true, nextAt: expect.any(String) } })
    const id = made.body.id as string
    expect((await admin('/__tasks/schedules?key=acme')).body.schedules).toEqual([expect.objectContaining({ id })])
    const now = await admin(`/__tasks/schedules/${id}/trigger`, { method: 'POST' })
    expect(now.status).toBe(202)
    expect(await waitForStatus(now.body.runId, 'completed')).toMatchObject({
      trigger: 'cron',
      schedule: { id },
      result: { input: { tenant: 'acme' } },
    })
    const filled = await admin(`/__tasks/schedules/${id}/backfill`, { body: { from: '2024-01-01T00:00:00Z', to: '2026-01-01T00:00:01Z' } })
    expect(filled.body.runs).toHaveLength(3)

    // Down past a tick: the tick's timer is moved ten seconds into the past, as a tick missed while down would be.
    await mf.dispose()
    const dir = join(persist, '-SvcTasks')
    const [file] = (await readdir(dir)).filter((name) => name.endsWith('.sqlite') && name !== 'metadata.sqlite')
    const db = new DatabaseSync(join(dir, file))
    const tick = new Date(Math.floor(Date.now() / 1000) * 1000 - 10_000)
    const moved = db
      .prepare("UPDATE svc_timers SET due_at = ?, record = json_set(record, '$.dueAt', ?) WHERE id = ?")
      .run(tick.getTime(), tick.toISOString(), `${id}:schedule`)
    db.close()
    expect(moved.changes).toBe(1)
    await start()
    // The runs of the missed tick: of this schedule, and for that tick.
    const ofTick = async () => {
      const listed = (await admin('/__tasks/runs?task=jobs.nightly&limit=500')).body.runs as { id: string }[]
      const records = await Promise.all(listed.map((item) => run(item.id)))
      return records.filter((record) => record.schedule?.id === id && record.schedule.tick === tick.toISOString())
    }
    for (let i = 0; (await ofTick()).length === 0; i++) {
      if (i > 200) throw new Error('the missed tick started no run')
      await sleep(25)
    }
    const [missed] = await ofTick()
    expect(await waitForStatus(missed.id, 'completed')).toMatchObject({ schedule: { id, tick: tick.toISOString() } })
    await sleep(200)
    expect(await ofTick()).toHaveLength(1)
    expect((await admin(`/__tasks/schedules/${id}`, { method: 'DELETE' })).body).toEqual({ id, deleted: true })
  })

  it('a callback URL made in the object wakes its run across a restart, once, for a client holding no secret', async () => {
    const started = await admin('/__tasks/jobs.refund', { body: { notify: notify.url } })
    const id = started.body.id as string
    const handed = await until('the callback URL handed out', () =>
      notify.hits.find((hit) => hit.what === 'callback-url' && hit.body.runId === id),
    )
    const url = handed.body.url as string
    expect(url).toMatch(/^http:\/\/worker\/__tasks\/callbacks\/cb1\./)
    await waitForStatus(id, 'suspended')
    await restart()
    const post = (body: string) => mf.dispatchFetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body })
    const altered = await mf.dispatchFetch(`${url.slice(0, -2)}xx`, { method: 'POST', body: '{}' })
    expect(altered.status).toBe(401)
    expect((await post('{"amount":12}')).status).toBe(202)
    expect(await waitForStatus(id, 'completed')).toMatchObject({ result: { refunded: { amount: 12 } } })
    expect((await post('{}')).status).toBe(409)
  })

  it('signals sent to a run in the object resume it in order, each once, across a restart', async () => {
    const started = await admin('/__tasks/jobs.chat', { body: {} })
    const id = started.body.id as string
    await waitForStatus(id, 'suspended')
    const send = (data: unknown, key: string) =>
      admin(`/__tasks/runs/${id}/signals/answer`, { body: data, headers: { 'idempotency-key': key } })
    expect((await send('yes', 's-1')).status).toBe(202)
    await restart()
    // Sent again after the restart: kept once, and not taken again by the second wait.
    expect((await send('yes', 's-1')).body).toMatchObject({ id: 's-1', duplicate: true })
    // Through the worker, a page's run token that allows the signal sends it; one that only reads does not.
    const withToken = async (data: unknown, key: string, signals?: string[]) => {
      const token = await createRunToken(id, { secret: SECRET, signals })
      return admin(`/__tasks/runs/${id}/signals/answer`, {
        body: data,
        headers: { authorization: `Bearer ${token}`, 'idempotency-key': key },
      })
    }
    expect(await withToken('no', 's-x')).toMatchObject({ status: 403, body: { code: 'RUN_TOKEN_NOT_ALLOWED' } })
    expect((await withToken('and yes', 's-2', ['answer'])).body).toMatchObject({ id: 's-2', runId: id, duplicate: false })
    expect(await waitForStatus(id, 'completed')).toMatchObject({ result: { answers: ['yes', 'and yes'] } })
    expect((await send('late', 's-3')).status).toBe(409)
    expect((await admin(`/__tasks/runs/${id}/signals`, { method: 'GET' })).body.signals).toHaveLength(2)
  })

  it('undoes the completed steps of a run in the object that failed for good', async () => {
    const started = await admin('/__tasks/jobs.trip', { body: {} })
    expect(await waitForStatus(started.body.id, 'failed')).toMatchObject({
      compensation: { reason: 'failed', status: 'completed', error: 'no cars left' },
      steps: { 'compensate:flight': { kind: 'compensation', output: 'cancelled F1' } },
    })
  })

  it('lists runs newest first with filters and a cursor, and replays one with the same input', async () => {
    const first = await admin('/__tasks/jobs.flaky', { body: { notify: notify.url, failures: 0 } })
    const second = await admin('/__tasks/jobs.flaky', { body: { notify: notify.url, failures: 0 } })
    await waitForStatus(second.body.id, 'completed')
    const page = await admin('/__tasks/runs?task=jobs.flaky&status=completed&limit=1')
    expect(page.status).toBe(200)
    expect(page.body.runs).toEqual([
      expect.objectContaining({ id: second.body.id, taskName: 'jobs.flaky', status: 'completed', attempts: 1 }),
    ])
    const next = await admin(`/__tasks/runs?task=jobs.flaky&status=completed&limit=1&cursor=${encodeURIComponent(page.body.cursor)}`)
    expect(next.body.runs.map((r: { id: string }) => r.id)).toEqual([first.body.id])
    expect((await admin('/__tasks/runs?limit=0')).body.code).toBe('INVALID_QUERY')

    const replay = await admin(`/__tasks/runs/${first.body.id}/replay`, { method: 'POST' })
    expect(replay.status).toBe(202)
    const replayed = await waitForStatus(replay.body.id, 'completed')
    expect(replayed).toMatchObject({ trigger: 'replay', replayOf: first.body.id, input: { notify: notify.url, failures: 0 } })
  })

  it('runs at most 2 attempts of a task with concurrency 2 at once in the object, the others queued until a slot frees', async () => {
    const started = await Promise.all(
      Array.from({ length: 20 }, (_, n) => admin('/__tasks/jobs.limited', { body: { notify: notify.url, n } })),
    )
    const ids = started.map((res) => res.body.id as string)
    const { body: tasks } = await admin('/__tasks')
    const limited = tasks.tasks.find((t: { name: string }) => t.name === 'jobs.limited')
    expect(limited).toMatchObject({ concurrency: { limit: 2, key: null }, rateLimit: null, debounce: null })
    expect(limited.queued).toBeGreaterThan(0)
    for (const id of ids) expect((await waitForStatus(id, 'completed')).ok).toBe(true)
    let open = 0
    let most = 0
    for (const hit of notify.hits) {
      if (!ids.includes(hit.body.runId)) continue
      if (hit.what === 'limited-start') most = Math.max(most, ++open)
      if (hit.what === 'limited-end') open--
    }
    expect(most).toBe(2)
    expect(notify.hits.filter((hit) => hit.what === 'limited-start' && ids.includes(hit.body.runId))).toHaveLength(20)
  })

  it('collapses debounced triggers for one key into one run with the latest input', async () => {
    const ids: string[] = []
    for (let n = 1; n <= 10; n++) ids.push((await admin('/__tasks/jobs.digest', { body: { user: 'a', n } })).body.id)
    const other = (await admin('/__tasks/jobs.digest', { body: { user: 'b', n: 1 } })).body.id
    expect(new Set(ids).size).toBe(1)
    expect(other).not.toBe(ids[0])
    expect((await waitForStatus(ids[0], 'completed')).result).toEqual({ user: 'a', n: 10 })
    expect((await waitForStatus(other, 'completed')).result).toEqual({ user: 'b', n: 1 })
  })

  it('answers GET /__tasks/events with 501 NOT_IMPLEMENTED: run changes happen in the object, out of the worker’s reach', async () => {
    const events = await admin('/__tasks/events')
    expect(events.status).toBe(501)
    expect(events.body).toMatchObject({ code: 'NOT_IMPLEMENTED', error: expect.stringMatching(/poll GET \/__tasks\/runs/) })
  })

  it('a delayed run survives a restart and runs when its delay is over', async () => {
    const started = await admin('/__tasks/jobs.delayed', { body: { notify: notify.url }, headers: { 'svc-delay-seconds': '2' } })
    expect(started).toMatchObject({ status: 202, body: { status: 'scheduled' } })
    const id = started.body.id as string
    await restart()
    await until('the delayed run after the restart', () => hitsOf('delayed', id).length > 0)
    expect(hitsOf('delayed', id)).toEqual([expect.objectContaining({ restarts: notify.state.restarts })])
    expect(await waitForStatus(id, 'completed')).toMatchObject({ ok: true, result: { ran: true } })
  })

  it('retries a failed attempt after its backoff, even when the object restarted during the backoff', async () => {
    // Attempts 1 to 5 fail; the backoff before attempt 6 is 1.6 s, time enough to restart in it.
    const started = await admin('/__tasks/jobs.flaky', { body: { notify: notify.url, failures: 5 } })
    const id = started.body.id as string
    for (let i = 0; (await run(id)).attempts.length < 5; i++) {
      if (i > 1000) throw new Error('attempt 5 never failed')
      await sleep(10)
    }
    await restart()
    await until('attempt 6 after the restart', () => hitsOf('attempt', id).some((hit) => hit.body.attempt === 6))
    const done = await waitForStatus(id, 'completed')
    expect(done.result).toEqual({ attempt: 6 })
    expect(done.attempts.map((attempt: { index: number }) => attempt.index)).toEqual([1, 2, 3, 4, 5, 6])
    expect(hitsOf('attempt', id).find((hit) => hit.body.attempt === 6)?.restarts).toBe(notify.state.restarts)
    // Each retry waited its backoff, 100 × 2^(n−1) ms after the attempt before it started.
    const starts = done.attempts.map((attempt: { startedAt: string }) => Date.parse(attempt.startedAt))
    for (let n = 1; n < 5; n++) expect(starts[n] - starts[n - 1]).toBeGreaterThanOrEqual(100 * 2 ** (n - 1))
  })

  it('an attempt cut off by a restart runs again when the heartbeat alarm wakes the object', { timeout: 60_000 }, async () => {
    const { body } = await admin('/__tasks/jobs.call', { body: { notify: notify.url } })
    const id = body.id as string
    await until('the first call', () => hitsOf('hang', id).length === 1)
    await restart()
    // No request reaches the worker: the alarm set while the attempt ran wakes the object, at most 30 s on.
    await until('the call made again after the restart', () => hitsOf('hang', id).length === 2, 45_000)
    const done = await waitForStatus(id, 'completed')
    expect(done.result).toEqual({ answeredOn: 2 })
    expect(hitsOf('hang', id).map((hit) => hit.restarts)).toEqual([notify.state.restarts - 1, notify.state.restarts])
  })

  it('the same Idempotency-Key twice gives one run, before and after a restart', async () => {
    const headers = { 'idempotency-key': 'order-42' }
    const first = await admin('/__tasks/jobs.delayed', { body: { notify: notify.url }, headers })
    const second = await admin('/__tasks/jobs.delayed', { body: { notify: notify.url }, headers })
    expect(second.body.id).toBe(first.body.id)
    await restart()
    const third = await admin('/__tasks/jobs.delayed', { body: { notify: notify.url }, headers })
    expect(third.body.id).toBe(first.body.id)
    await waitForStatus(first.body.id, 'completed')
    expect(hitsOf('delayed', first.body.id)).toHaveLength(1)
  })

  it('scheduled() fires the cron task into the object, whose run is stored and readable over GET /__tasks/<id>', async () => {
    const worker = (await mf.getWorker()) as unknown as { scheduled(options: { cron: string }): Promise<{ outcome: string }> }
    expect((await worker.scheduled({ cron: '0 4 * * *' })).outcome).toBe('ok')
    const { body } = await admin('/__tasks')
    const nightly = body.tasks.find((task: { name: string }) => task.name === 'jobs.nightly')
    expect(nightly.lastRun).toMatchObject({ status: 'completed' })
    await restart()
    expect(await run(nightly.lastRun.id)).toMatchObject({
      id: nightly.lastRun.id,
      taskName: 'jobs.nightly',
      trigger: 'cron',
      status: 'completed',
      result: { input: { _cron: true } },
    })
  })

  it('enqueue() and completeToken() in app code on the worker reach the object', async () => {
    const res = await mf.dispatchFetch('http://worker/api/enqueue', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ task: 'jobs.approval' }),
    })
    const { runId, status } = (await res.json()) as { runId: string; status: string }
    expect(status).toBe('running')
    const suspended = await waitForStatus(runId, 'suspended')
    const answer = await mf.dispatchFetch('http://worker/api/enqueue', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ token: suspended.suspended.waitpoint.tokenId, payload: 'from a route' }),
    })
    expect(await answer.json()).toEqual({ result: 'completed' })
    expect((await waitForStatus(runId, 'completed')).result).toEqual({ approved: 'from a route' })
  })

  it('enqueue() in task code, which runs in the object, starts a run in the object', async () => {
    const { body } = await admin('/__tasks/jobs.fanout', { body: { notify: notify.url } })
    const parent = await waitForStatus(body.id, 'completed')
    const child = await waitForStatus(parent.result.child, 'completed')
    expect(child).toMatchObject({ taskName: 'jobs.delayed', trigger: 'enqueue', result: { ran: true } })
    expect(hitsOf('delayed', child.id)).toHaveLength(1)
  })

  it('runs a task of 40 s of awaited work to completion', { timeout: 90_000 }, async () => {
    const { body } = await admin('/__tasks/jobs.long', { body: { seconds: 40 } })
    // Few requests: nothing but the object itself keeps the attempt going.
    let done: { status: string }
    while ((done = await run(body.id)).status === 'running') await sleep(2000)
    expect(done).toMatchObject({ status: 'completed', result: { waited: 40 }, attempts: [{ index: 1 }] })
    // It was run and recorded by the object: its storage still has it after a restart.
    await restart()
    expect(await run(body.id)).toMatchObject({ status: 'completed', result: { waited: 40 } })
  })
})

describe('durable runs on cloudflare: a worker that does not bind SvcTasks', () => {
  const headers = { authorization: `Bearer ${SECRET}`, 'content-type': 'application/json' }
  const workers: Miniflare[] = []
  let app: Awaited<ReturnType<typeof copyFixtureApp>>

  /** A worker of `scriptPath` or of one module's `code`, with no durableObjects option, and what it prints. */
  function startUnbound(options: { scriptPath: string; modulesRoot: string } | { code: string }) {
    const logs = { output: '' }
    const mf = new Miniflare({
      ...('code' in options
        ? { modules: [{ type: 'ESModule' as const, path: '/worker.mjs', contents: options.code }], modulesRoot: '/' }
        : { scriptPath: options.scriptPath, modulesRoot: options.modulesRoot, modules: true }),
      compatibilityDate: '2025-09-01',
      bindings: { SVC_TASK_SECRET: SECRET },
      handleRuntimeStdio(stdout: Readable, stderr: Readable) {
        stdout.on('data', (chunk: Buffer) => (logs.output += chunk))
        stderr.on('data', (chunk: Buffer) => (logs.output += chunk))
      },
    })
    workers.push(mf)
    return { mf, logs }
  }

  beforeAll(async () => {
    app = await copyFixtureApp('durable-app')
    await buildApp({ root: app.root, target: 'cloudflare' })
  })
  afterAll(async () => {
    await Promise.all(workers.map((mf) => mf.dispose()))
    await app?.cleanup()
  })

  it('the built worker, which keeps runs only in the object, refuses its first request and names the wrangler.json entry', async () => {
    const out = join(app.root, '.output/cloudflare')
    const { mf, logs } = startUnbound({ scriptPath: join(out, 'index.mjs'), modulesRoot: out })
    const res = await mf.dispatchFetch('http://worker/__tasks/jobs.approval', { method: 'POST', headers, body: '{}' })
    expect(res.status).toBe(500)
    await res.arrayBuffer()
    const [error] = await waitForOutput(() => logs.output, /^.*no SVC_TASKS Durable Object binding.*$/m)
    expect(error).toContain('Deploy with the wrangler.json svc build wrote beside it')
    expect(error).toContain('"durable_objects": { "bindings": [{ "name": "SVC_TASKS", "class_name": "SvcTasks" }] }')
    // Every path is refused alike: the worker is made at its first event, and cannot be without its runs' place.
    const other = await mf.dispatchFetch('http://worker/api/enqueue')
    expect(other.status).toBe(500)
    await other.arrayBuffer()
  })

  it('a hand-written createWorker keeps runs in memory and logs one warning that says what to add', async () => {
    const entry = `
import { createWorker } from ${JSON.stringify(fileURLToPath(new URL('../../targets/cloudflare/runtime.ts', import.meta.url)))}
const routes = [
  { path: '/api/jobs/approval', module: { route: { kind: 'task' }, POST: async (ctx) => ({ approved: (await ctx.step.waitForToken('approve')).payload }) } },
]
export default createWorker({ routes })
`
    const { code } = await bundle({ input: '/virtual/unbound-worker.mjs', entrySource: entry, platform: 'worker', minify: false })
    const { mf, logs } = startUnbound({ code })
    const started = await mf.dispatchFetch('http://worker/__tasks/jobs.approval', { method: 'POST', headers, body: '{}' })
    const { id } = (await started.json()) as { id: string }
    const suspended = await pollRun(
      (runId) => mf.dispatchFetch(`http://worker/__tasks/${runId}`, { headers }) as unknown as Promise<Response>,
      id,
    )
    expect(suspended.status).toBe('suspended')
    await mf.dispatchFetch('http://worker/__tasks', { headers })
    const [warning] = await waitForOutput(() => logs.output, /^.*no SVC_TASKS Durable Object binding.*$/m)
    expect(warning).toContain('"durable_objects": { "bindings": [{ "name": "SVC_TASKS", "class_name": "SvcTasks" }] }')
    expect(warning).toContain('"new_sqlite_classes": ["SvcTasks"]')
    expect(logs.output.split('no SVC_TASKS Durable Object binding')).toHaveLength(2)
  })
})
