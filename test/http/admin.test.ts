import * as v from 'valibot'
import { afterEach, describe, expect, it } from 'vitest'
import {
  MemoryRunStore,
  createSvcHandler,
  createTaskRuntime,
  tokenIdFor,
  type RunRecord,
  type RunStore,
  type RuntimeApiRoute,
  type RuntimePage,
  type SvcHandlerOptions,
  type TaskRuntime,
} from '../../src/index.ts'
import { SqliteRunStore } from '../../src/node.ts'
import { isLoopback, timingSafeEqual } from '../../src/runtime/admin/auth.ts'
import { deferred, recordingLogger, serve, until } from './_helpers.ts'

function appRoutes(gate = deferred()) {
  const seen: unknown[] = []
  const routes: RuntimeApiRoute[] = [
    {
      path: '/api/report',
      module: {
        route: { kind: 'task', retries: 1 },
        schedule: '0 3 * * *',
        input: v.optional(v.object({ month: v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(12)) })),
        POST: async (ctx: { input: unknown }) => {
          seen.push(ctx.input)
          await gate.promise
          return { done: ctx.input ?? 'no input' }
        },
      },
    },
    {
      path: '/api/approvals/wait',
      module: {
        kind: 'task',
        POST: async (ctx: { step: { waitForToken(key: string, o?: object): Promise<unknown> } }) => ctx.step.waitForToken('ok'),
      },
    },
    {
      path: '/api/approvals/quick',
      module: {
        kind: 'task',
        POST: async (ctx: { step: { waitForToken(key: string, o?: object): Promise<unknown> } }) =>
          ctx.step.waitForToken('ok', { timeoutSeconds: 0.05 }),
      },
    },
    { path: '/api/hello', module: { GET: () => 'hi' } },
  ]
  return { routes, seen, gate }
}

/** Task secrets of the length a production server requires (32 bytes at least). */
const SECRET = 'tok-0123456789abcdef0123456789abcdef'
const OTHER_SECRET = 'alt-0123456789abcdef0123456789abcdef'
const json = { 'content-type': 'application/json' }

const runtimes = new Set<TaskRuntime>()
afterEach(async () => {
  await Promise.all([...runtimes].map((runtime) => runtime.close()))
  runtimes.clear()
})

type AppOptions = Omit<SvcHandlerOptions, 'routes'> & { apiRoutes: readonly RuntimeApiRoute[]; store?: RunStore }

/**
 * The whole HTTP surface in-process, asked by a loopback peer as a local server's socket
 * reports it; `svc.fetch(path)` reads like a request to a server on this machine.
 */
function app({ apiRoutes, store, ...options }: AppOptions) {
  const logger = recordingLogger()
  const runtime = store ? createTaskRuntime({ routes: apiRoutes, store, logger }) : options.runtime
  const handler = createSvcHandler({ routes: apiRoutes, logger, ...options, runtime })
  runtimes.add(handler.runtime)
  return {
    runtime: handler.runtime,
    fetch: (path: string, init?: RequestInit) =>
      handler.fetch(new Request(`http://localhost${path}`, init), { remoteAddress: '127.0.0.1' }),
    close: () => handler.runtime.close(),
  }
}

async function getRun(svc: ReturnType<typeof app>, id: string): Promise<RunRecord> {
  return (await (await svc.fetch(`/__tasks/${encodeURIComponent(id)}`)).json()) as RunRecord
}

describe('task admin surface', () => {
  it('lists registered tasks with name, path, schedule, events, retries, timeout and lastRun', async () => {
    const { routes, gate } = appRoutes()
    gate.resolve()
    const svc = app({ apiRoutes: routes })
    const res = await svc.fetch(`/__tasks`)
    expect(res.status).toBe(200)
    const { tasks } = await res.json()
    expect(tasks).toContainEqual({
      name: 'report',
      path: '/api/report',
      schedule: '0 3 * * *',
      events: [],
      retries: 1,
      timeout: 30000,
      concurrency: null,
      rateLimit: null,
      debounce: null,
      queued: 0,
      lastRun: null,
    })
    expect(tasks.map((t: { name: string }) => t.name).sort()).toEqual(['approvals.quick', 'approvals.wait', 'report'])

    const started = await (await svc.fetch(`/__tasks/report`, { method: 'POST' })).json()
    await svc.runtime.waitForRun(started.id)
    const after = (await (await svc.fetch(`/__tasks`)).json()).tasks.find((t: { name: string }) => t.name === 'report')
    expect(after.lastRun).toEqual({ id: started.id, status: 'completed', finishedAt: expect.any(String) })
  })

  it('answers POST /__tasks/<name> with 202 { id, status: "running" } before the handler finishes', async () => {
    const { routes, gate, seen } = appRoutes()
    const svc = app({ apiRoutes: routes })
    const res = await svc.fetch(`/__tasks/report`, { method: 'POST', headers: json, body: '{"month":4}' })
    expect(res.status).toBe(202)
    const body = await res.json()
    expect(body).toEqual({ id: expect.any(String), status: 'running' })
    await until(() => seen.length === 1)
    const running = await getRun(svc, body.id)
    expect(running.status).toBe('running')
    gate.resolve()
    await svc.runtime.waitForRun(body.id)
    const run = await getRun(svc, body.id)
    expect(run).toMatchObject({ id: body.id, taskName: 'report', status: 'completed', ok: true, result: { done: { month: 4 } } })
    expect(run.attempts).toHaveLength(1)
    expect(run.createdAt).toEqual(expect.any(String))
  })

  it('takes an empty body as input undefined', async () => {
    const { routes, gate, seen } = appRoutes()
    gate.resolve()
    const svc = app({ apiRoutes: routes })
    const { id } = await (await svc.fetch(`/__tasks/report`, { method: 'POST' })).json()
    await svc.runtime.waitForRun(id)
    expect(seen).toEqual([undefined])
  })

  it('answers malformed JSON with 400 INVALID_JSON and starts no run', async () => {
    const { routes, seen } = appRoutes()
    const svc = app({ apiRoutes: routes })
    const res = await svc.fetch(`/__tasks/report`, { method: 'POST', headers: json, body: '{"month":' })
    expect(res.status).toBe(400)
    expect((await res.json()).code).toBe('INVALID_JSON')
    expect(seen).toEqual([])
  })

  it('answers a body over the limit with 413 PAYLOAD_TOO_LARGE', async () => {
    const { routes, seen } = appRoutes()
    const svc = app({ apiRoutes: routes, bodyLimit: 100 })
    const res = await svc.fetch(`/__tasks/report`, {
      method: 'POST',
      headers: json,
      body: JSON.stringify({ pad: 'x'.repeat(500) }),
    })
    expect(res.status).toBe(413)
    expect((await res.json()).code).toBe('PAYLOAD_TOO_LARGE')
    expect(seen).toEqual([])
  })

  it('answers a payload that fails the input schema with 400 VALIDATION_FAILED and never calls the handler', async () => {
    const { routes, seen } = appRoutes()
    const svc = app({ apiRoutes: routes })
    const res = await svc.fetch(`/__tasks/report`, { method: 'POST', headers: json, body: '{"month":13}' })
    expect(res.status).toBe(400)
    const body = await res.json()
    expect(body).toMatchObject({ code: 'VALIDATION_FAILED', error: expect.any(String) })
    expect(body.details).toEqual([expect.objectContaining({ target: 'input', path: ['month'] })])
    expect(seen).toEqual([])
  })

  it('answers an unknown task with 404 TASK_NOT_FOUND naming the available ones', async () => {
    const svc = app({ apiRoutes: appRoutes().routes })
    const res = await svc.fetch(`/__tasks/nope`, { method: 'POST' })
    expect(res.status).toBe(404)
    const body = await res.json()
    expect(body.code).toBe('TASK_NOT_FOUND')
    expect(body.error).toContain('report')
  })

  it('answers an unknown run id with 404 RUN_NOT_FOUND', async () => {
    const svc = app({ apiRoutes: appRoutes().routes })
    const res = await svc.fetch(`/__tasks/does-not-exist`)
    expect(res.status).toBe(404)
    expect((await res.json()).code).toBe('RUN_NOT_FOUND')
  })

  it('answers other methods with 405 and an Allow header', async () => {
    const svc = app({ apiRoutes: appRoutes().routes })
    const list = await svc.fetch(`/__tasks`, { method: 'DELETE' })
    expect(list.status).toBe(405)
    expect(list.headers.get('allow')).toBe('GET, HEAD')
    const one = await svc.fetch(`/__tasks/report`, { method: 'PUT' })
    expect(one.status).toBe(405)
    expect(one.headers.get('allow')).toBe('GET, HEAD, POST')
    const token = await svc.fetch(`/__tasks/tokens/x`, { method: 'GET' })
    expect(token.status).toBe(405)
    expect(token.headers.get('allow')).toBe('POST')
  })

  it('reads enqueue options from the Idempotency-Key header and rejects a bad delay header with 400', async () => {
    const { routes, gate } = appRoutes()
    gate.resolve()
    const svc = app({ apiRoutes: routes })
    const first = await (await svc.fetch(`/__tasks/report`, { method: 'POST', headers: { 'idempotency-key': 'k1' } })).json()
    const second = await (await svc.fetch(`/__tasks/report`, { method: 'POST', headers: { 'idempotency-key': 'k1' } })).json()
    expect(second.id).toBe(first.id)
    const bad = await svc.fetch(`/__tasks/report`, { method: 'POST', headers: { 'svc-delay-seconds': 'soon' } })
    expect(bad.status).toBe(400)
    expect((await bad.json()).code).toBe('INVALID_OPTIONS')
  })
})

describe('enqueue options in the Idempotency-Key, Svc-Delay-Seconds and Svc-Priority headers', () => {
  const refusals: [string, Record<string, string>, RegExp][] = [
    ['an empty key', { 'idempotency-key': '' }, /^Header Idempotency-Key: idempotencyKey must be a non-empty string \(got ""\)$/],
    // Fetch strips the whitespace around a header value, so this arrives empty too.
    ['a key of whitespace only', { 'idempotency-key': '   ' }, /^Header Idempotency-Key: idempotencyKey must be a non-empty string/],
    [
      'a key over the length limit',
      { 'idempotency-key': 'k'.repeat(1000) },
      /^Header Idempotency-Key: idempotencyKey must be at most 255 characters \(got 1000 characters\)$/,
    ],
    [
      'a delay past the largest date',
      { 'svc-delay-seconds': '1e300' },
      /^Header Svc-Delay-Seconds: delaySeconds must be at most 31536000 seconds \(365 days\) \(got "1e300"\)$/,
    ],
    [
      'a delay past the 365-day maximum',
      { 'svc-delay-seconds': '31536001' },
      /^Header Svc-Delay-Seconds: delaySeconds must be at most 31536000 seconds/,
    ],
    ['a negative delay', { 'svc-delay-seconds': '-1' }, /^Header Svc-Delay-Seconds: .*\(got "-1"\)$/],
    ['NaN', { 'svc-delay-seconds': 'NaN' }, /^Header Svc-Delay-Seconds: .*\(got "NaN"\)$/],
    ['a word', { 'svc-delay-seconds': 'abc' }, /^Header Svc-Delay-Seconds: .*\(got "abc"\)$/],
    ['an empty delay', { 'svc-delay-seconds': '' }, /^Header Svc-Delay-Seconds: .*\(got ""\)$/],
    ['Infinity', { 'svc-delay-seconds': 'Infinity' }, /^Header Svc-Delay-Seconds: .*\(got "Infinity"\)$/],
    ['a hexadecimal delay', { 'svc-delay-seconds': '0x10' }, /^Header Svc-Delay-Seconds: .*\(got "0x10"\)$/],
    [
      'a priority past 1000',
      { 'svc-priority': '1001' },
      /^Header Svc-Priority: priority must be a whole number from -1000 to 1000; higher starts first \(got "1001"\)$/,
    ],
    ['a fractional priority', { 'svc-priority': '1.5' }, /^Header Svc-Priority: .*\(got "1.5"\)$/],
    ['a priority in words', { 'svc-priority': 'high' }, /^Header Svc-Priority: .*\(got "high"\)$/],
    ['an empty priority', { 'svc-priority': '' }, /^Header Svc-Priority: .*\(got ""\)$/],
  ]

  it.each(refusals)('answers %s with 400 INVALID_OPTIONS naming the header, and starts no run', async (_, headers, message) => {
    const { routes, seen, gate } = appRoutes()
    gate.resolve()
    const svc = app({ apiRoutes: routes })
    const res = await svc.fetch(`/__tasks/report`, { method: 'POST', headers })
    expect(res.status).toBe(400)
    const body = await res.json()
    expect(body.code).toBe('INVALID_OPTIONS')
    expect(body.error).toMatch(message)
    const { tasks } = await (await svc.fetch(`/__tasks`)).json()
    expect(tasks.find((t: { name: string }) => t.name === 'report').lastRun).toBeNull()
    expect(seen).toEqual([])
  })

  it('accepts the longest delay and key, and decimal delays as enqueue() sends them', async () => {
    const { routes, gate } = appRoutes()
    gate.resolve()
    const svc = app({ apiRoutes: routes })
    for (const delay of ['31536000', '0.5', '1e-7', ' 2 ']) {
      const res = await svc.fetch(`/__tasks/report`, { method: 'POST', headers: { 'svc-delay-seconds': delay } })
      expect(res.status, delay).toBe(202)
      expect((await res.json()).status).toBe('scheduled')
    }
    const keyed = await svc.fetch(`/__tasks/report`, {
      method: 'POST',
      headers: { 'idempotency-key': 'k'.repeat(255), 'svc-delay-seconds': '60' },
    })
    expect(keyed.status).toBe(202)
    for (const priority of [1000, -1000, 0]) {
      const res = await svc.fetch(`/__tasks/report`, { method: 'POST', headers: { 'svc-priority': String(priority) } })
      expect(res.status).toBe(202)
      const { id } = await res.json()
      const run = await (await svc.fetch(`/__tasks/runs/${id}`)).json()
      expect(run.priority).toBe(priority === 0 ? undefined : priority)
    }
  })
})

describe('JSON nested too deeply for a run record', () => {
  const nested = (depth: number) => '['.repeat(depth) + ']'.repeat(depth)
  const tooDeep = { code: 'INVALID_JSON', error: 'Request body nests arrays and objects deeper than 256 levels, the limit' }

  it('answers a task payload deeper than 256 levels with 400 INVALID_JSON and starts no run', async () => {
    const svc = app({ apiRoutes: appRoutes().routes })
    for (const depth of [257, 5000]) {
      const res = await svc.fetch(`/__tasks/approvals.quick`, { method: 'POST', headers: json, body: nested(depth) })
      expect(res.status).toBe(400)
      expect(await res.json()).toEqual(tooDeep)
    }
    const { tasks } = await (await svc.fetch(`/__tasks`)).json()
    expect(tasks.find((t: { name: string }) => t.name === 'approvals.quick').lastRun).toBeNull()
    const deepest = await svc.fetch(`/__tasks/approvals.quick`, { method: 'POST', headers: json, body: nested(256) })
    expect(deepest.status).toBe(202)
    const { id } = await deepest.json()
    await svc.runtime.waitForRun(id)
    const read = await svc.fetch(`/__tasks/${id}`)
    expect(read.status).toBe(200)
  })

  it('does not count brackets inside strings, escaped quotes included', async () => {
    const svc = app({ apiRoutes: appRoutes().routes })
    const text = `\\"${'['.repeat(300)}\\\\`
    const body = JSON.stringify({ text, more: [text] })
    const res = await svc.fetch(`/__tasks/approvals.quick`, { method: 'POST', headers: json, body })
    expect(res.status).toBe(202)
    const { id } = await res.json()
    expect((await getRun(svc, id)).input).toEqual({ text, more: [text] })
  })

  it('refuses it the same way in front of the SQLite store', async () => {
    const store = new SqliteRunStore({ path: ':memory:' })
    try {
      const svc = app({ apiRoutes: appRoutes().routes, store })
      const res = await svc.fetch(`/__tasks/approvals.quick`, { method: 'POST', headers: json, body: nested(5000) })
      expect(res.status).toBe(400)
      expect(await res.json()).toEqual(tooDeep)
      expect(await store.size()).toBe(0)
      await svc.close()
    } finally {
      await store.close()
    }
  })

  it('answers a token payload deeper than 256 levels with 400 INVALID_JSON and leaves the token waiting', async () => {
    const svc = app({ apiRoutes: appRoutes().routes })
    const { id } = await (await svc.fetch(`/__tasks/approvals.wait`, { method: 'POST' })).json()
    await until(async () => (await getRun(svc, id)).status === 'suspended')
    const url = `/__tasks/tokens/${encodeURIComponent(tokenIdFor(id, 'ok'))}`
    const res = await svc.fetch(url, { method: 'POST', headers: json, body: nested(5000) })
    expect(res.status).toBe(400)
    expect(await res.json()).toEqual(tooDeep)
    expect((await getRun(svc, id)).status).toBe('suspended')
    expect((await svc.fetch(url, { method: 'POST', headers: json, body: '{"approved":true}' })).status).toBe(200)
    expect((await svc.runtime.waitForRun(id)).result).toEqual({ payload: { approved: true } })
  })

  it('answers a revalidate body deeper than 256 levels with 400 INVALID_JSON', async () => {
    const page: RuntimePage = { path: '/news', mode: 'hybrid', revalidate: 60, module: { default: () => '<p>news</p>' } }
    const svc = app({ apiRoutes: appRoutes().routes, pages: [page] })
    const res = await svc.fetch(`/__svc/revalidate`, { method: 'POST', headers: json, body: `{"paths":${nested(300)}}` })
    expect(res.status).toBe(400)
    expect(await res.json()).toEqual(tooDeep)
  })
})

describe('a full run store behind POST /__tasks/<name>', () => {
  it('answers 503 STORE_FULL with Retry-After, starts no run and keeps every live one', async () => {
    const { routes } = appRoutes()
    const svc = app({ apiRoutes: routes, store: new MemoryRunStore({ maxRuns: 2 }) })
    const delayed = { method: 'POST', headers: { 'svc-delay-seconds': '3600' } }
    const ids: string[] = []
    for (let i = 0; i < 2; i++) ids.push((await (await svc.fetch(`/__tasks/report`, delayed)).json()).id)
    const res = await svc.fetch(`/__tasks/report`, delayed)
    expect(res.status).toBe(503)
    expect(res.headers.get('retry-after')).toBe('30')
    const body = await res.json()
    expect(body.code).toBe('STORE_FULL')
    expect(body.error).toMatch(/^MemoryRunStore is full: 2 runs are live/)
    for (const id of ids) expect((await getRun(svc, id)).status).toBe('scheduled')
  })
})

describe('maxPayloadBytes on the task admin surface', () => {
  const routes: RuntimeApiRoute[] = [
    { path: '/api/echo', module: { kind: 'task', POST: (ctx: { input: unknown }) => ctx.input } },
    {
      path: '/api/approve',
      module: {
        kind: 'task',
        POST: async (ctx: { step: { waitForToken(key: string): Promise<unknown> } }) => ctx.step.waitForToken('ok'),
      },
    },
  ]

  it('answers an input over the limit with 413 PAYLOAD_TOO_LARGE naming its size and the limit, and starts no run', async () => {
    const store = new MemoryRunStore()
    const svc = app({ apiRoutes: routes, runtime: createTaskRuntime({ routes, store, maxPayloadBytes: 200 }) })
    const res = await svc.fetch('/__tasks/echo', { method: 'POST', headers: json, body: JSON.stringify({ text: 'x'.repeat(300) }) })
    expect(res.status).toBe(413)
    expect(await res.json()).toEqual({
      code: 'PAYLOAD_TOO_LARGE',
      error: 'The input of task "echo" is 311 bytes of JSON, over the 200-byte limit (maxPayloadBytes)',
    })
    expect(await store.listRuns()).toEqual([])
    expect((await svc.fetch('/__tasks/echo', { method: 'POST', headers: json, body: '{"text":"x"}' })).status).toBe(202)
  })

  it('answers a token payload over the limit with 413 and leaves the token waiting', async () => {
    const svc = app({ apiRoutes: routes, runtime: createTaskRuntime({ routes, maxPayloadBytes: 200 }) })
    const { id } = await (await svc.fetch('/__tasks/approve', { method: 'POST' })).json()
    await until(async () => (await getRun(svc, id)).status === 'suspended')
    const url = `/__tasks/tokens/${encodeURIComponent(tokenIdFor(id, 'ok'))}`
    const res = await svc.fetch(url, { method: 'POST', headers: json, body: JSON.stringify({ note: 'n'.repeat(300) }) })
    expect(res.status).toBe(413)
    expect((await res.json()).error).toMatch(
      /^The payload of token ".+" is 311 bytes of JSON, over the 200-byte limit \(maxPayloadBytes\)$/,
    )
    expect((await getRun(svc, id)).status).toBe('suspended')
    expect((await svc.fetch(url, { method: 'POST', headers: json, body: '{"note":"ok"}' })).status).toBe(200)
  })

  it('createSvcHandler passes maxPayloadBytes to the runtime it creates, and reads bodies that large', async () => {
    const svc = app({ apiRoutes: routes, maxPayloadBytes: 3 * 1024 * 1024 })
    expect(svc.runtime.maxPayloadBytes).toBe(3 * 1024 * 1024)
    // Past the default 1 MiB body limit, within the payload limit.
    const text = 'y'.repeat(2 * 1024 * 1024)
    const res = await svc.fetch('/__tasks/echo', { method: 'POST', headers: json, body: JSON.stringify({ text }) })
    expect(res.status).toBe(202)
    const done = await svc.runtime.waitForRun((await res.json()).id)
    expect((done.result as { text: string }).text).toHaveLength(text.length)
    expect(() => createSvcHandler({ routes, maxPayloadBytes: -1 })).toThrow(
      new RangeError('createSvcHandler(): maxPayloadBytes must be a positive whole number of bytes (got -1)'),
    )
  })
})

describe('GET /__tasks counts queued runs without loading them', () => {
  it("reads each task's queued count from the store, never listing its queued runs", async () => {
    const gate = deferred()
    const limited: RuntimeApiRoute[] = [
      { path: '/api/one', module: { route: { kind: 'task', concurrency: 1 }, POST: () => gate.promise } },
      { path: '/api/two', module: { route: { kind: 'task', rateLimit: { limit: 1, periodSeconds: 3600 } }, POST: () => 'ok' } },
      { path: '/api/free', module: { kind: 'task', POST: () => gate.promise } },
    ]
    const store = new MemoryRunStore()
    const listed: unknown[] = []
    const watched = new Proxy(store, {
      get(target, name) {
        const value = Reflect.get(target, name, target)
        if (name === 'listRuns') {
          return (query?: unknown) => {
            listed.push(query)
            return target.listRuns(query as never)
          }
        }
        return typeof value === 'function' ? value.bind(target) : value
      },
    })
    const svc = app({ apiRoutes: limited, store: watched })
    for (let i = 0; i < 4; i++) await svc.runtime.trigger('one', { i })
    for (let i = 0; i < 3; i++) await svc.runtime.trigger('two', { i })
    await svc.runtime.trigger('free')
    listed.length = 0
    const res = await svc.fetch('/__tasks')
    expect(res.status).toBe(200)
    const { tasks } = (await res.json()) as { tasks: { name: string; queued: number }[] }
    expect(Object.fromEntries(tasks.map((t) => [t.name, t.queued]))).toEqual({ one: 3, two: 2, free: 0 })
    // The last run of each task is still read, one run each; no queue is listed.
    expect(listed).toHaveLength(3)
    for (const query of listed) expect(query).toMatchObject({ limit: 1 })
    gate.resolve()
  })
})

describe('completing tokens over POST /__tasks/tokens/<id>', () => {
  it('completes a waiting token with the body as payload (200), then 409 for a second completion', async () => {
    const svc = app({ apiRoutes: appRoutes().routes })
    const { id } = await (await svc.fetch(`/__tasks/approvals.wait`, { method: 'POST' })).json()
    const suspended = await until(async () => {
      const run = await getRun(svc, id)
      return run.status === 'suspended' ? run : undefined
    })
    const tokenId = tokenIdFor(id, 'ok')
    expect(suspended.suspended?.waitpoint).toMatchObject({ type: 'token', tokenId })
    const url = `/__tasks/tokens/${encodeURIComponent(tokenId)}`
    const res = await svc.fetch(url, { method: 'POST', headers: json, body: '{"approved":true}' })
    expect(res.status).toBe(200)
    expect(await res.json()).toEqual({ ok: true, status: 'completed' })
    const done = await svc.runtime.waitForRun(id)
    expect(done.result).toEqual({ payload: { approved: true } })
    const again = await svc.fetch(url, { method: 'POST', headers: json, body: '{}' })
    expect(again.status).toBe(409)
    expect((await again.json()).code).toBe('TOKEN_ALREADY_COMPLETED')
  })

  it('answers 404 TOKEN_NOT_FOUND for an unknown token and 409 TOKEN_TIMED_OUT for one that timed out', async () => {
    const svc = app({ apiRoutes: appRoutes().routes })
    const unknown = await svc.fetch(`/__tasks/tokens/nobody`, { method: 'POST' })
    expect(unknown.status).toBe(404)
    expect((await unknown.json()).code).toBe('TOKEN_NOT_FOUND')

    const { id } = await (await svc.fetch(`/__tasks/approvals.quick`, { method: 'POST' })).json()
    const finished = await svc.runtime.waitForRun(id)
    expect(finished.result).toEqual({ timedOut: true })
    const late = await svc.fetch(`/__tasks/tokens/${encodeURIComponent(tokenIdFor(id, 'ok'))}`, { method: 'POST' })
    expect(late.status).toBe(409)
    expect(await late.json()).toMatchObject({ code: 'TOKEN_TIMED_OUT', status: 'timed_out' })
  })
})

describe('admin auth', () => {
  const routes = appRoutes().routes

  it('with SVC_TASK_SECRET set, answers a missing token with 401 and WWW-Authenticate: Bearer, saying what to send', async () => {
    const svc = app({ apiRoutes: routes, env: { NODE_ENV: 'test', SVC_TASK_SECRET: SECRET } })
    const res = await svc.fetch(`/__tasks`)
    expect(res.status).toBe(401)
    expect(res.headers.get('www-authenticate')).toMatch(/^Bearer/)
    const body = await res.json()
    expect(body.code).toBe('UNAUTHORIZED')
    expect(body.error).toBe('Send Authorization: Bearer <secret>, the value of SVC_TASK_SECRET on the server')
    const wrong = await svc.fetch(`/__tasks`, { headers: { authorization: 'Bearer nope' } })
    expect((await wrong.json()).error).toBe('The bearer token does not match the task secret, SVC_TASK_SECRET')
  })

  it('rejects a wrong token and accepts the right one, even from loopback', async () => {
    const svc = app({ apiRoutes: routes, env: { NODE_ENV: 'test', SVC_TASK_SECRET: SECRET } })
    expect((await svc.fetch(`/__tasks`, { headers: { authorization: 'Bearer nope' } })).status).toBe(401)
    expect((await svc.fetch(`/__tasks`, { headers: { authorization: `Basic ${SECRET}` } })).status).toBe(401)
    expect((await svc.fetch(`/__tasks`, { headers: { authorization: `Bearer ${SECRET}` } })).status).toBe(200)
    expect((await svc.fetch(`/__tasks`, { headers: { authorization: `bearer ${SECRET}` } })).status).toBe(200)
  })

  it('accepts SVC_TASK_SECRET as the secret too', async () => {
    const svc = app({ apiRoutes: routes, env: { NODE_ENV: 'production', SVC_TASK_SECRET: OTHER_SECRET } })
    expect((await svc.fetch(`/__tasks`, { headers: { authorization: `Bearer ${OTHER_SECRET}` } })).status).toBe(200)
  })

  it('without a secret, allows loopback peers only in development and test', async () => {
    // Over a real socket: the Node server is what reports the peer address.
    for (const NODE_ENV of ['development', 'test']) {
      const server = await serve({ apiRoutes: routes, env: { NODE_ENV } })
      expect((await fetch(`${server.url}/__tasks`)).status).toBe(200)
      await server.close()
    }
    for (const NODE_ENV of ['production', undefined]) {
      const server = await serve({ apiRoutes: routes, env: { NODE_ENV } })
      const res = await fetch(`${server.url}/__tasks`)
      expect(res.status).toBe(401)
      expect((await res.json()).error).toBe(
        'No task secret is configured: set SVC_TASK_SECRET on the server and send Authorization: Bearer <secret> ' +
          '(without a secret, only loopback requests are allowed, and only when NODE_ENV is development or test)',
      )
      await server.close()
    }
  })

  it('says nothing of loopback where the host reports no peer address (edge and function targets)', async () => {
    const handler = createSvcHandler({ routes, env: { NODE_ENV: 'development' }, logger: recordingLogger() })
    for (const info of [undefined, {}]) {
      const res = await handler.fetch(new Request('http://svc/__tasks'), info)
      expect(res.status).toBe(401)
      expect((await res.json()).error).toBe(
        'No task secret is configured: set SVC_TASK_SECRET on the server and send Authorization: Bearer <secret>',
      )
    }
  })

  it('judges loopback by the socket address, never by X-Forwarded-For', async () => {
    const handler = createSvcHandler({ routes, env: { NODE_ENV: 'development' }, logger: recordingLogger() })
    const spoofed = new Request('http://svc/__tasks', { headers: { 'x-forwarded-for': '127.0.0.1' } })
    expect((await handler.fetch(spoofed, { remoteAddress: '203.0.113.9' })).status).toBe(401)
    expect((await handler.fetch(new Request('http://svc/__tasks'))).status).toBe(401)
    expect((await handler.fetch(new Request('http://localhost/__tasks'), { remoteAddress: '::ffff:127.0.0.1' })).status).toBe(200)
  })

  it('gates /__svc/revalidate like the admin surface, but not /__health', async () => {
    // A hybrid page gives the revalidate endpoint something to purge, so it is mounted.
    const pages = [{ path: '/cached', mode: 'hybrid' as const, module: { default: () => 'cached' } }]
    const svc = app({ apiRoutes: routes, pages, env: { NODE_ENV: 'production', SVC_TASK_SECRET: SECRET } })
    expect((await svc.fetch(`/__health`)).status).toBe(200)
    const denied = await svc.fetch(`/__svc/revalidate`, { method: 'POST', body: '{"paths":["/"]}' })
    expect(denied.status).toBe(401)
    expect(denied.headers.get('www-authenticate')).toMatch(/^Bearer/)
    const ok = await svc.fetch(`/__svc/revalidate`, {
      method: 'POST',
      body: '{"paths":["/"]}',
      headers: { authorization: `Bearer ${SECRET}`, ...json },
    })
    expect(ok.status).toBe(200)
  })

  const noop: RuntimeApiRoute[] = [{ path: '/api/jobs/noop', kind: 'task', module: { POST: async () => 'done' } }]

  function list(secret: string, authorization: string | undefined): Promise<Response> {
    const handler = createSvcHandler({ routes: noop, env: { NODE_ENV: 'production', SVC_TASK_SECRET: secret }, logger: recordingLogger() })
    return handler.fetch(new Request('http://svc/__tasks', { headers: authorization === undefined ? {} : { authorization } }))
  }

  describe('the task secret in the Authorization header', () => {
    // enqueue() and the Vercel cron check send `Bearer <secret>` verbatim, so
    // any secret the operator sets must be accepted written that way.
    it('accepts a secret that contains spaces, sent as Bearer <secret>', async () => {
      expect((await list('correct horse battery staple, twice over', 'Bearer correct horse battery staple, twice over')).status).toBe(200)
    })

    it('still refuses a token that is only part of such a secret', async () => {
      const res = await list('correct horse battery staple, twice over', 'Bearer correct')
      expect(res.status).toBe(401)
      expect(res.headers.get('www-authenticate')).toMatch(/^Bearer/)
    })

    it('ignores whitespace around the token and the case of the scheme', async () => {
      expect((await list(SECRET, `bearer   ${SECRET}  `)).status).toBe(200)
      expect((await list(SECRET, `Bearer ${SECRET} x`)).status).toBe(401)
      expect((await list(SECRET, `Basic ${SECRET}`)).status).toBe(401)
    })
  })

  describe('where the secret is read from', () => {
    const withEnv = (env: Record<string, string>, authorization: string) =>
      createSvcHandler({ routes: noop, env: { NODE_ENV: 'production', ...env }, logger: recordingLogger() }).fetch(
        new Request('http://svc/__tasks', { headers: { authorization } }),
      )

    it('an empty THEN_TASK_SECRET counts as unset, so SVC_TASK_SECRET applies', async () => {
      expect((await withEnv({ THEN_TASK_SECRET: '', SVC_TASK_SECRET: SECRET }, `Bearer ${SECRET}`)).status).toBe(200)
      expect((await withEnv({ THEN_TASK_SECRET: '', SVC_TASK_SECRET: SECRET }, 'Bearer ')).status).toBe(401)
    })
  })

  it('recognizes loopback addresses and nothing else', () => {
    for (const a of ['127.0.0.1', '127.1.2.3', '::1', '::ffff:127.0.0.1', '0:0:0:0:0:0:0:1']) expect(isLoopback(a)).toBe(true)
    for (const a of ['10.0.0.1', '::ffff:10.0.0.1', '128.0.0.1', 'localhost', '', undefined]) expect(isLoopback(a)).toBe(false)
  })

  it('compares secrets exactly', () => {
    expect(timingSafeEqual('secret', 'secret')).toBe(true)
    expect(timingSafeEqual('secreT', 'secret')).toBe(false)
    expect(timingSafeEqual('secret-longer', 'secret')).toBe(false)
    expect(timingSafeEqual('', 'secret')).toBe(false)
    expect(timingSafeEqual('sec', 'secret')).toBe(false)
    expect(timingSafeEqual('ключ', 'ключ')).toBe(true)
  })
})

describe('createSvcHandler with a shared runtime', () => {
  it('drives the runtime it is given', async () => {
    const { routes, gate } = appRoutes()
    gate.resolve()
    const runtime = createTaskRuntime({ routes, logger: recordingLogger() })
    const handler = createSvcHandler({ routes, runtime, env: { SVC_TASK_SECRET: SECRET }, logger: recordingLogger() })
    expect(handler.runtime).toBe(runtime)
    const res = await handler.fetch(
      new Request('http://svc/__tasks/report', { method: 'POST', headers: { authorization: `Bearer ${SECRET}` } }),
    )
    const { id } = await res.json()
    expect((await runtime.waitForRun(id)).status).toBe('completed')
    await runtime.close()
  })
})

describe('createSvcHandler holdRuns: runs and waitUntil', () => {
  const routes: RuntimeApiRoute[] = [
    { path: '/api/quick', module: { kind: 'task', POST: async () => 'done' } },
    {
      path: '/api/napper',
      module: {
        kind: 'task',
        POST: async (ctx: any) => {
          await ctx.step.sleep('long-nap', 3600)
          return 'woke'
        },
      },
    },
  ]
  const post = (name: string) => new Request(`http://localhost/__tasks/${name}`, { method: 'POST' })

  it('hands a started run to waitUntil until it settles, for platforms that freeze after the response', async () => {
    const handler = createSvcHandler({ routes, env: { NODE_ENV: 'test' }, logger: recordingLogger() })
    const held: Promise<unknown>[] = []
    const res = await handler.fetch(post('quick'), { remoteAddress: '127.0.0.1', waitUntil: (p) => void held.push(p) })
    expect(res.status).toBe(202)
    expect(held).toHaveLength(1)
    await held[0]
    const { id } = (await res.json()) as { id: string }
    expect((await handler.runtime.getRun(id))?.status).toBe('completed')
  })

  it('holds nothing with holdRuns: false', async () => {
    const handler = createSvcHandler({ routes, env: { NODE_ENV: 'test' }, logger: recordingLogger(), holdRuns: false })
    const held: Promise<unknown>[] = []
    const res = await handler.fetch(post('quick'), { remoteAddress: '127.0.0.1', waitUntil: (p) => void held.push(p) })
    expect(res.status).toBe(202)
    expect(held).toHaveLength(0)
  })

  it('rejects a holdRuns that is not a boolean', () => {
    expect(() => createSvcHandler({ routes, holdRuns: 'yes' as never })).toThrow(
      'createSvcHandler(): holdRuns must be a boolean (got "yes")',
    )
  })
})
