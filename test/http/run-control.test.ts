/**
 * The run-control API of the task admin surface over a real server on port 0:
 * listing runs with filters and a cursor, cancelling, replaying, the event
 * stream, and the admin auth on each of these routes.
 */
import * as v from 'valibot'
import { describe, expect, it } from 'vitest'
import {
  cancelRun,
  createTaskRuntime,
  HttpError,
  MemoryRunStore,
  RunFinishedError,
  tokenIdFor,
  type RunRecord,
  type RuntimeApiRoute,
  type TaskContext,
} from '../../src/index.ts'
import { changeFeed, eventStream } from '../../src/runtime/admin/run-change-stream.ts'
import { cancelRunOverHttp, completeTokenOverHttp } from '../../src/runtime/tasks/client/client.ts'
import { serve, until } from './_helpers.ts'

/** A task secret of the length a production server requires (32 bytes at least). */
const SECRET = 's3cret-0123456789abcdef0123456789ab'
const JSON_HEADERS = { 'content-type': 'application/json' }

function routes(): RuntimeApiRoute[] {
  return [
    {
      path: '/api/jobs/nap',
      module: {
        kind: 'task',
        POST: async (ctx: TaskContext) => {
          await ctx.step.run('before', () => 'slept on it')
          await ctx.step.sleep('nap', 3600)
        },
      },
    },
    { path: '/api/jobs/approve', module: { kind: 'task', POST: async (ctx: TaskContext) => ctx.step.waitForToken('ok') } },
    {
      path: '/api/jobs/booked',
      module: {
        kind: 'task',
        POST: async (ctx: TaskContext) => {
          await ctx.step.run('book', () => 'B1', { compensate: () => 'given back' })
          await ctx.step.sleep('nap', 3600)
        },
      },
    },
    {
      path: '/api/jobs/flaky',
      module: {
        kind: 'task',
        input: v.object({ n: v.number() }),
        POST: async (ctx: TaskContext<{ n: number }>) => {
          if (ctx.input.n < 0) throw new Error('negative')
          return ctx.input.n * 2
        },
      },
    },
    { path: '/api/jobs/parent', module: { kind: 'task', POST: async (ctx: TaskContext) => ctx.step.waitForTask('nap', 'jobs.nap') } },
    {
      path: '/api/jobs/spawner',
      module: {
        kind: 'task',
        POST: async (ctx: TaskContext) => {
          await ctx.step.enqueue('nap', 'jobs.nap')
          await ctx.step.waitForToken('ok')
        },
      },
    },
    { path: '/api/runs', module: { kind: 'task', POST: async () => 'a task named runs' } },
    { path: '/api/events', module: { kind: 'task', POST: async () => 'a task named events' } },
  ]
}

type Server = Awaited<ReturnType<typeof serve>>

async function start(env: Record<string, string> = { NODE_ENV: 'test' }): Promise<Server> {
  return serve({ apiRoutes: routes(), env, store: new MemoryRunStore() })
}

async function post(server: Server, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${server.url}${path}`, {
    method: 'POST',
    headers: body === undefined ? headers : { ...JSON_HEADERS, ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
}

async function get(server: Server, path: string, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${server.url}${path}`, { headers })
}

async function trigger(server: Server, task: string, body?: unknown): Promise<string> {
  const res = await post(server, `/__tasks/${task}`, body)
  expect(res.status).toBe(202)
  return ((await res.json()) as { id: string }).id
}

async function runOf(server: Server, id: string): Promise<RunRecord> {
  return (await (await get(server, `/__tasks/${id}`)).json()) as RunRecord
}

async function reached(server: Server, id: string, status: RunRecord['status']): Promise<RunRecord> {
  return until(async () => {
    const run = await runOf(server, id)
    return run.status === status ? run : undefined
  })
}

describe('GET /__tasks/runs', () => {
  it('lists run summaries newest first, filtered by task and by repeated status, and pages with a cursor', async () => {
    const server = await start()
    const napping = await trigger(server, 'jobs.nap')
    await reached(server, napping, 'suspended')
    const ids = [napping]
    for (const n of [1, 2, -1]) {
      const id = await trigger(server, 'jobs.flaky', { n })
      await reached(server, id, n < 0 ? 'failed' : 'completed')
      ids.push(id)
    }
    const newestFirst = [...ids].reverse()

    const all = await (await get(server, '/__tasks/runs')).json()
    expect(all.cursor).toBeUndefined()
    expect(all.runs.map((r: { id: string }) => r.id)).toEqual(newestFirst)
    const failed = all.runs[0]
    expect(Object.keys(failed).sort()).toEqual(
      ['attempts', 'createdAt', 'finishedAt', 'id', 'ok', 'startedAt', 'status', 'taskName', 'trigger'].sort(),
    )
    expect(failed).toMatchObject({ id: ids[3], taskName: 'jobs.flaky', status: 'failed', trigger: 'manual', attempts: 1, ok: false })

    const flaky = await (await get(server, '/__tasks/runs?task=jobs.flaky')).json()
    expect(flaky.runs.map((r: { id: string }) => r.id)).toEqual(newestFirst.slice(0, 3))
    const some = await (await get(server, '/__tasks/runs?status=suspended&status=failed')).json()
    expect(some.runs.map((r: { id: string }) => r.id)).toEqual([ids[3], ids[0]])

    const first = await (await get(server, '/__tasks/runs?limit=3')).json()
    expect(first.runs.map((r: { id: string }) => r.id)).toEqual(newestFirst.slice(0, 3))
    expect(typeof first.cursor).toBe('string')
    const second = await (await get(server, `/__tasks/runs?limit=3&cursor=${encodeURIComponent(first.cursor)}`)).json()
    expect(second.runs.map((r: { id: string }) => r.id)).toEqual(newestFirst.slice(3))
    expect(second.cursor).toBeUndefined()
  })

  it('lists runs of a task name the app does not have as an empty page, since the store may keep runs of a removed task', async () => {
    const server = await start()
    const res = await get(server, '/__tasks/runs?task=jobs.gone')
    expect(res.status).toBe(200)
    expect(await res.json()).toEqual({ runs: [] })
  })

  it('filters by version, lists the version of each run that has one, and the record carries its migrations', async () => {
    const store = new MemoryRunStore()
    const server = await serve({
      apiRoutes: [
        { path: '/api/jobs/old', version: 'v1', module: { kind: 'task', POST: async () => 'old' } },
        { path: '/api/jobs/new', version: 'v2', module: { kind: 'task', POST: async () => 'new' } },
        { path: '/api/jobs/plain', module: { kind: 'task', POST: async () => 'plain' } },
      ],
      env: { NODE_ENV: 'test' },
      store,
    })
    const old = await trigger(server, 'jobs.old')
    await reached(server, old, 'completed')
    const plain = await trigger(server, 'jobs.plain')
    await reached(server, plain, 'completed')
    const fresh = await trigger(server, 'jobs.new')
    await reached(server, fresh, 'completed')
    const moved = '00000000-0000-7000-8000-000000000001'
    const migrations = [{ from: 'v1', to: 'v2', at: '2025-01-01T00:00:01.000Z' }]
    await store.createRun({
      id: moved,
      taskName: 'jobs.new',
      status: 'completed',
      trigger: 'manual',
      input: null,
      ok: true,
      attempts: [],
      steps: {},
      createdAt: '2025-01-01T00:00:00.000Z',
      version: 'v2',
      migrations,
    })

    const all = await (await get(server, '/__tasks/runs')).json()
    const versions = Object.fromEntries(all.runs.map((r: { id: string; version?: string }) => [r.id, r.version]))
    expect(versions).toEqual({ [old]: 'v1', [plain]: undefined, [fresh]: 'v2', [moved]: 'v2' })
    expect(all.runs.find((r: { id: string }) => r.id === plain)).not.toHaveProperty('version')

    const v2 = await (await get(server, '/__tasks/runs?version=v2')).json()
    expect(v2.runs.map((r: { id: string }) => r.id).sort()).toEqual([fresh, moved].sort())
    const v1 = await (await get(server, '/__tasks/runs?version=v1&task=jobs.old&status=completed')).json()
    expect(v1.runs.map((r: { id: string }) => r.id)).toEqual([old])
    expect(await (await get(server, '/__tasks/runs?version=v3')).json()).toEqual({ runs: [] })
    const paged = await (await get(server, '/__tasks/runs?version=v2&limit=1')).json()
    const next = await (await get(server, `/__tasks/runs?version=v2&limit=1&cursor=${encodeURIComponent(paged.cursor)}`)).json()
    expect([...paged.runs, ...next.runs].map((r: { id: string }) => r.id).sort()).toEqual([fresh, moved].sort())
    expect(next.cursor).toBeUndefined()

    expect(await runOf(server, moved)).toMatchObject({ version: 'v2', migrations })
    expect(await runOf(server, old)).toMatchObject({ version: 'v1' })
  })

  it('answers a bad parameter with 400 INVALID_QUERY naming it', async () => {
    const server = await start()
    const cases: [string, RegExp][] = [
      ['version=', /version must be a version of a task \(got an empty value\)/],
      ['version=v1&version=v2', /version may be given once/],
      ['version=v%201', /version must be 1 to 128 printable ASCII characters without spaces \(got "v 1"\)/],
      ['version=caf%C3%A9', /version must be 1 to 128 printable ASCII characters without spaces \(got "café"\)/],
      [`version=${'v'.repeat(129)}`, /version must be 1 to 128 printable ASCII characters/],
      [
        'status=sleeping',
        /status must be one of scheduled, queued, running, suspended, completed, failed, cancelled, compensation_failed \(got "sleeping"\)/,
      ],
      ['limit=0', /limit must be a whole number from 1 to 500 \(got "0"\)/],
      ['limit=501', /limit must be a whole number from 1 to 500/],
      ['limit=1.5', /limit must be a whole number/],
      ['limit=ten', /limit must be a whole number/],
      ['cursor=', /cursor must be the cursor of the previous page/],
      ['cursor=no-such-run', /cursor "no-such-run" names no run the store holds/],
      ['task=', /task must be a task name/],
      ['task=a&task=b', /task may be given once/],
      ['order=asc', /Unknown query parameter "order"/],
    ]
    for (const [query, message] of cases) {
      const res = await get(server, `/__tasks/runs?${query}`)
      expect(res.status, query).toBe(400)
      const body = await res.json()
      expect(body.code, query).toBe('INVALID_QUERY')
      expect(body.error, query).toMatch(message)
    }
  })
})

describe('POST /__tasks/runs/<id>/cancel', () => {
  it('cancels a sleeping run (200), keeps its steps readable, and answers 409 RUN_FINISHED the second time', async () => {
    const server = await start()
    const id = await trigger(server, 'jobs.nap')
    await reached(server, id, 'suspended')
    const res = await post(server, `/__tasks/runs/${id}/cancel`)
    expect(res.status).toBe(200)
    expect(await res.json()).toEqual({ id, status: 'cancelled', cancelledWith: [] })
    const run = await runOf(server, id)
    expect(run).toMatchObject({ status: 'cancelled', ok: false, steps: { before: { status: 'completed', output: 'slept on it' } } })
    expect(run.finishedAt).toBeTypeOf('string')
    expect(run.suspended).toBeUndefined()
    const again = await post(server, `/__tasks/runs/${id}/cancel`)
    expect(again.status).toBe(409)
    const body = await again.json()
    expect(body.code).toBe('RUN_FINISHED')
    expect(body.error).toMatch(/already finished \(cancelled\)/)
  })

  it('?compensate=true undoes the completed steps first (200 running, then cancelled); cancelRun() over HTTP says so; another value is 400', async () => {
    const server = await start()
    const id = await trigger(server, 'jobs.booked')
    await reached(server, id, 'suspended')
    const bad = await post(server, `/__tasks/runs/${id}/cancel?compensate=yes`)
    expect(bad.status).toBe(400)
    expect(await bad.json()).toMatchObject({ code: 'INVALID_QUERY', error: expect.stringContaining('?compensate= is true or false') })
    const res = await post(server, `/__tasks/runs/${id}/cancel?compensate=true`)
    expect(res.status).toBe(200)
    expect(await res.json()).toMatchObject({
      id,
      status: 'running',
      cancelledWith: [],
      compensation: { reason: 'cancelled', status: 'running' },
    })
    const run = await reached(server, id, 'cancelled')
    expect(run).toMatchObject({
      compensation: { reason: 'cancelled', status: 'completed' },
      steps: { 'compensate:book': { output: 'given back' } },
    })

    const other = await trigger(server, 'jobs.booked')
    await reached(server, other, 'suspended')
    const env = { SVC_TASK_URL: server.url, SVC_TASK_SECRET: SECRET }
    const result = await cancelRunOverHttp(other, env, 'waited', true)
    expect(result).toMatchObject({ id: other, status: 'running', compensation: { reason: 'cancelled' } })
    await reached(server, other, 'cancelled')
  })

  it('cancels the child run it waits on and says so; ?children=none leaves it, ?children=all adds the runs it enqueued; another value is 400 INVALID_QUERY', async () => {
    const server = await start()
    const napOf = async (parent: string) => {
      const run = await reached(server, parent, 'suspended')
      return (run.suspended!.waitpoint as { runId: string }).runId
    }
    const parent = await trigger(server, 'jobs.parent')
    const child = await napOf(parent)
    await reached(server, child, 'suspended')
    const bad = await post(server, `/__tasks/runs/${parent}/cancel?children=every`)
    expect(bad.status).toBe(400)
    expect(await bad.json()).toMatchObject({ code: 'INVALID_QUERY', error: expect.stringContaining('children must be waited') })
    const res = await post(server, `/__tasks/runs/${parent}/cancel`)
    expect(await res.json()).toEqual({ id: parent, status: 'cancelled', cancelledWith: [child] })
    expect((await runOf(server, child)).status).toBe('cancelled')

    const alone = await trigger(server, 'jobs.parent')
    const kept = await napOf(alone)
    await reached(server, kept, 'suspended')
    expect(await (await post(server, `/__tasks/runs/${alone}/cancel?children=none`)).json()).toEqual({
      id: alone,
      status: 'cancelled',
      cancelledWith: [],
    })
    expect((await runOf(server, kept)).status).toBe('suspended')

    // ?children=all: a run it enqueued goes too.
    const spawner = await trigger(server, 'jobs.spawner')
    const spawned = (await reached(server, spawner, 'suspended')).steps.nap.output as { runId: string }
    await reached(server, spawned.runId, 'suspended')
    expect(await (await post(server, `/__tasks/runs/${spawner}/cancel?children=all`)).json()).toEqual({
      id: spawner,
      status: 'cancelled',
      cancelledWith: [spawned.runId],
    })
    expect((await runOf(server, spawned.runId)).status).toBe('cancelled')
  })

  it('answers 409 RUN_FINISHED for a completed run and 404 RUN_NOT_FOUND for an unknown id', async () => {
    const server = await start()
    const id = await trigger(server, 'jobs.flaky', { n: 1 })
    await reached(server, id, 'completed')
    const finished = await post(server, `/__tasks/runs/${id}/cancel`)
    expect(finished.status).toBe(409)
    expect((await finished.json()).code).toBe('RUN_FINISHED')
    const missing = await post(server, '/__tasks/runs/no-such-run/cancel')
    expect(missing.status).toBe(404)
    expect(await missing.json()).toMatchObject({ code: 'RUN_NOT_FOUND', error: expect.stringContaining('no-such-run') })
  })

  it('makes the token of a cancelled run answer 409 RUN_CANCELLED', async () => {
    const server = await start()
    const id = await trigger(server, 'jobs.approve')
    await reached(server, id, 'suspended')
    expect((await post(server, `/__tasks/runs/${id}/cancel`)).status).toBe(200)
    const res = await post(server, `/__tasks/tokens/${encodeURIComponent(tokenIdFor(id, 'ok'))}`, { approved: true })
    expect(res.status).toBe(409)
    expect(await res.json()).toMatchObject({ code: 'RUN_CANCELLED', status: 'run_cancelled' })
    expect((await runOf(server, id)).status).toBe('cancelled')
  })

  it('answers other methods on a run action with 405 and an unknown action with 404', async () => {
    const server = await start()
    const id = await trigger(server, 'jobs.nap')
    const wrong = await get(server, `/__tasks/runs/${id}/cancel`)
    expect(wrong.status).toBe(405)
    expect(wrong.headers.get('allow')).toBe('POST')
    const unknown = await post(server, `/__tasks/runs/${id}/pause`)
    expect(unknown.status).toBe(404)
    expect((await unknown.json()).error).toMatch(/a run's actions are cancel, replay, wake, logs, signals and updates/)
    expect((await fetch(`${server.url}/__tasks/runs`, { method: 'DELETE' })).status).toBe(405)
  })
})

describe('cancelRun()', () => {
  it('cancels in-process through the active runtime, and rejects with RunFinishedError the second time', async () => {
    const server = await start()
    const id = await trigger(server, 'jobs.nap')
    await reached(server, id, 'suspended')
    expect(await cancelRun(id)).toEqual({ id, status: 'cancelled', cancelledWith: [] })
    await expect(cancelRun(id)).rejects.toBeInstanceOf(RunFinishedError)
  })

  it('over HTTP, cancels with POST /__tasks/runs/<id>/cancel and turns 404 and 409 into an HttpError with their code', async () => {
    const server = await start()
    const env = { SVC_TASK_URL: server.url }
    const id = await trigger(server, 'jobs.approve')
    await reached(server, id, 'suspended')
    expect(await cancelRunOverHttp(id, env)).toEqual({ id, status: 'cancelled', cancelledWith: [] })
    const finished = await cancelRunOverHttp(id, env).catch((e: unknown) => e)
    expect(finished).toBeInstanceOf(HttpError)
    expect(finished).toMatchObject({ status: 409, code: 'RUN_FINISHED' })
    await expect(cancelRunOverHttp('no-such-run', env)).rejects.toMatchObject({ status: 404, code: 'RUN_NOT_FOUND' })
    // completeToken() over HTTP reads the 409 RUN_CANCELLED of the token as its result.
    expect(await completeTokenOverHttp(tokenIdFor(id, 'ok'), { late: true }, env)).toBe('run_cancelled')
  })
})

describe('POST /__tasks/runs/<id>/replay', () => {
  it('starts a new run of the same task with the same input (202), marked trigger replay and replayOf', async () => {
    const server = await start()
    const failed = await trigger(server, 'jobs.flaky', { n: -1 })
    await reached(server, failed, 'failed')
    const res = await post(server, `/__tasks/runs/${failed}/replay`)
    expect(res.status).toBe(202)
    const { id, status } = await res.json()
    expect(id).not.toBe(failed)
    expect(status).toBe('running')
    const replayed = await reached(server, id, 'failed')
    expect(replayed).toMatchObject({ taskName: 'jobs.flaky', trigger: 'replay', replayOf: failed, input: { n: -1 } })
    const listed = await (await get(server, '/__tasks/runs?limit=1')).json()
    expect(listed.runs[0]).toMatchObject({ id, trigger: 'replay' })
  })

  it('a body that is not { fromStep?, input? } is 400 INVALID_OPTIONS naming what is wrong, and starts nothing', async () => {
    const server = await start()
    const failed = await trigger(server, 'jobs.flaky', { n: -1 })
    await reached(server, failed, 'failed')
    const cases: [unknown, string][] = [
      [[1], "A replay's body is { fromStep?, input? }, or none (got an array)"],
      [{ from: 'a' }, 'A replay\'s body takes fromStep and input only (got "from")'],
      [{ fromStep: 3 }, 'fromStep must be the key of a step the run recorded (got 3)'],
      [{ fromStep: '' }, 'fromStep must be the key of a step the run recorded (got "")'],
    ]
    for (const [body, error] of cases) {
      const res = await post(server, `/__tasks/runs/${failed}/replay`, body)
      expect(res.status).toBe(400)
      expect(await res.json()).toEqual({ code: 'INVALID_OPTIONS', error })
    }
    const input = await post(server, `/__tasks/runs/${failed}/replay`, { input: { n: 'x' } })
    expect([input.status, (await input.json()).code]).toEqual([400, 'VALIDATION_FAILED'])
    expect((await (await get(server, '/__tasks/runs?task=jobs.flaky')).json()).runs).toHaveLength(1)
  })

  it('answers 404 RUN_NOT_FOUND for an unknown run', async () => {
    const server = await start()
    const res = await post(server, '/__tasks/runs/no-such-run/replay')
    expect(res.status).toBe(404)
    expect((await res.json()).code).toBe('RUN_NOT_FOUND')
  })
})

describe('tasks named like the surface', () => {
  it('POST /__tasks/runs and POST /__tasks/events still start the tasks named runs and events', async () => {
    const server = await start()
    for (const task of ['runs', 'events']) {
      const id = await trigger(server, task)
      expect(await reached(server, id, 'completed')).toMatchObject({ taskName: task, result: `a task named ${task}` })
    }
    // GET on the same paths is the surface's.
    expect((await get(server, '/__tasks/runs')).headers.get('content-type')).toMatch(/application\/json/)
  })
})

/** Reads `data:` events of an event stream until `stop` says so; returns them and the reader. */
async function readEvents(
  body: ReadableStream<Uint8Array>,
  stop: (events: { id: string; taskName: string; status: string }[]) => boolean,
): Promise<{ events: { id: string; taskName: string; status: string }[]; reader: ReadableStreamDefaultReader<Uint8Array> }> {
  const reader = body.getReader()
  const decoder = new TextDecoder()
  const events: { id: string; taskName: string; status: string }[] = []
  let buffer = ''
  while (!stop(events)) {
    const { value, done } = await reader.read()
    if (done) break
    buffer += decoder.decode(value, { stream: true })
    let end = buffer.indexOf('\n\n')
    while (end >= 0) {
      const block = buffer.slice(0, end)
      buffer = buffer.slice(end + 2)
      for (const line of block.split('\n')) if (line.startsWith('data: ')) events.push(JSON.parse(line.slice(6)))
      end = buffer.indexOf('\n\n')
    }
  }
  return { events, reader }
}

describe('GET /__tasks/events', () => {
  it('streams one { id, taskName, status } event per run change', async () => {
    const server = await start()
    const res = await get(server, '/__tasks/events')
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/)
    const id = await trigger(server, 'jobs.nap')
    const reading = readEvents(res.body!, (seen) => seen.some((e) => e.id === id && e.status === 'cancelled'))
    await reached(server, id, 'suspended')
    expect((await post(server, `/__tasks/runs/${id}/cancel`)).status).toBe(200)
    const { events, reader } = await reading
    expect(events).toEqual([
      { id, taskName: 'jobs.nap', status: 'running' },
      { id, taskName: 'jobs.nap', status: 'suspended' },
      { id, taskName: 'jobs.nap', status: 'cancelled' },
    ])
    await reader.cancel()
  })

  it('stops listening to the runtime once the client goes away', async () => {
    const runtime = createTaskRuntime({ routes: routes(), env: {} })
    let listening = 0
    const listen = runtime.onRunChange!
    runtime.onRunChange = (listener, onEnd) => {
      listening++
      const stop = listen(listener, onEnd)
      return () => {
        listening--
        stop()
      }
    }
    const server = await serve({ apiRoutes: routes(), env: { NODE_ENV: 'test' }, runtime })
    try {
      const aborted = new AbortController()
      const res = await fetch(`${server.url}/__tasks/events`, { signal: aborted.signal })
      await res.body!.getReader().read()
      expect(listening).toBe(1)
      aborted.abort()
      await until(() => listening === 0)
    } finally {
      await server.close()
      await runtime.close()
    }
  })

  it('sends a heartbeat comment while no run changes', async () => {
    const runtime = createTaskRuntime({ routes: [], env: {} })
    try {
      const res = eventStream(changeFeed(runtime.onRunChange!), Response, 10)
      const reader = res.body!.getReader()
      const decoder = new TextDecoder()
      let text = ''
      while (!text.includes(': heartbeat\n\n')) text += decoder.decode((await reader.read()).value)
      expect(text.startsWith(': subscribed\n\n')).toBe(true)
      await reader.cancel()
    } finally {
      await runtime.close()
    }
  })

  it('ends open streams when the server shuts down, and the shutdown does not wait for them', async () => {
    const server = await start()
    const res = await get(server, '/__tasks/events')
    const reader = res.body!.getReader()
    await reader.read()
    await server.close()
    // The stream ended: the reader sees its end rather than hanging.
    for (;;) {
      const { done } = await reader.read()
      if (done) break
    }
  })
})

describe('auth of the run-control routes', () => {
  const calls: [string, string][] = [
    ['GET', '/__tasks/runs'],
    ['GET', '/__tasks/runs/some-id'],
    ['POST', '/__tasks/runs/some-id/cancel'],
    ['POST', '/__tasks/runs/some-id/replay'],
    ['GET', '/__tasks/events'],
  ]

  it('in production, answers 401 without the secret and with a wrong one, and serves the right one', async () => {
    const server = await start({ NODE_ENV: 'production', SVC_TASK_SECRET: SECRET })
    for (const [method, path] of calls) {
      const none = await fetch(`${server.url}${path}`, { method })
      expect(none.status, `${method} ${path}`).toBe(401)
      expect(none.headers.get('www-authenticate')).toMatch(/^Bearer/)
      const wrong = await fetch(`${server.url}${path}`, { method, headers: { authorization: 'Bearer nope' } })
      expect(wrong.status, `${method} ${path}`).toBe(401)
      expect((await wrong.json()).error).toMatch(/does not match the task secret/)
      const right = await fetch(`${server.url}${path}`, {
        method,
        headers: { authorization: `Bearer ${SECRET}` },
      })
      expect(right.status, `${method} ${path}`).not.toBe(401)
      await right.body?.cancel()
    }
  })

  it('in production without a secret, refuses even loopback', async () => {
    const server = await start({ NODE_ENV: 'production' })
    for (const [method, path] of calls) {
      const res = await fetch(`${server.url}${path}`, { method })
      expect(res.status, `${method} ${path}`).toBe(401)
      expect((await res.json()).error).toMatch(/No task secret is configured/)
    }
  })

  it('in development without a secret, is open to loopback', async () => {
    const server = await start({ NODE_ENV: 'development' })
    const id = await trigger(server, 'jobs.nap')
    const expected: Record<string, number> = {
      '/__tasks/runs': 200,
      [`/__tasks/runs/${id}`]: 200,
      [`/__tasks/runs/${id}/cancel`]: 200,
      [`/__tasks/runs/${id}/replay`]: 202,
      '/__tasks/events': 200,
    }
    for (const [path, status] of Object.entries(expected)) {
      const method = path.endsWith('cancel') || path.endsWith('replay') ? 'POST' : 'GET'
      const res = await fetch(`${server.url}${path}`, { method })
      expect(res.status, path).toBe(status)
      await res.body?.cancel()
    }
  })
})
