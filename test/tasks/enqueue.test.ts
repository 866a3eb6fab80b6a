import { createServer, type IncomingHttpHeaders, type RequestListener, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { HttpError, TaskNotFoundError } from '../../src/runtime/errors.ts'
import {
  completeToken,
  enqueue,
  enqueueOptionsFromHeaders,
  taskServerUrl,
  getActiveTaskRuntime,
  runScheduledTasks,
  setActiveTaskRuntime,
  tokenIdFor,
} from '../../src/runtime/tasks/index.ts'
import { completeTokenOverHttp, enqueueOverHttp } from '../../src/runtime/tasks/client/client.ts'
import { runtime, task, until } from './_helpers.ts'

const ENV_KEYS = ['SVC_TASK_URL', 'SVC_TASK_TIMEOUT_MS', 'PORT', 'THEN_TASK_SECRET', 'SVC_TASK_SECRET'] as const
let savedEnv: Record<string, string | undefined>

beforeEach(() => {
  savedEnv = Object.fromEntries(ENV_KEYS.map((k) => [k, process.env[k]]))
  for (const k of ENV_KEYS) delete process.env[k]
  setActiveTaskRuntime(null)
})

afterEach(() => {
  for (const k of ENV_KEYS) {
    if (savedEnv[k] === undefined) delete process.env[k]
    else process.env[k] = savedEnv[k]
  }
  setActiveTaskRuntime(null)
})

describe('enqueue in-process', () => {
  it('nothing is active at import; a runtime becomes active only when set', () => {
    expect(getActiveTaskRuntime()).toBeUndefined()
    const rt = runtime([task('a', () => 1)])
    expect(getActiveTaskRuntime()).toBeUndefined()
    setActiveTaskRuntime(rt)
    expect(getActiveTaskRuntime()).toBe(rt)
  })

  it('dispatches in-process to the active runtime and returns { runId, status }', async () => {
    const rt = runtime([task('report', (ctx) => ctx.input)])
    setActiveTaskRuntime(rt)
    const result = await enqueue('report', { x: 1 })
    expect(result).toEqual({ runId: expect.any(String), status: 'running' })
    const done = await rt.waitForRun(result.runId)
    expect(done).toMatchObject({ result: { x: 1 }, trigger: 'enqueue' })
    expect(await enqueue('report', undefined, { delaySeconds: 30 })).toMatchObject({ status: 'scheduled' })
    await expect(enqueue('missing')).rejects.toBeInstanceOf(TaskNotFoundError)
  })

  it('options follow the enqueue rule, and a refusal names enqueue and the task', async () => {
    const rt = runtime([task('report', () => 1)])
    setActiveTaskRuntime(rt)
    await expect(enqueue('report', undefined, { delaySeconds: 1e300 })).rejects.toThrow(
      /^enqueue\("report"\): delaySeconds must be at most 31536000 seconds \(365 days\) \(got 1e\+300\)$/,
    )
    await expect(enqueue('report', undefined, { idempotencyKey: ' ' })).rejects.toThrow(
      /^enqueue\("report"\): idempotencyKey must contain a character other than whitespace/,
    )
    expect(await rt.listRuns()).toEqual([])
  })

  it('closing the active runtime deactivates it', async () => {
    const rt = runtime([task('a', () => 1)])
    setActiveTaskRuntime(rt)
    await rt.close()
    expect(getActiveTaskRuntime()).toBeUndefined()
  })

  it('completeToken and runScheduledTasks use the active runtime', async () => {
    const rt = runtime([
      task('approve', async (ctx) => ctx.step.waitForToken('ok')),
      task('nightly', () => 'ran', { schedule: '0 2 * * *' }),
    ])
    await expect(runScheduledTasks('0 2 * * *')).rejects.toThrow(/no task runtime is active/)
    setActiveTaskRuntime(rt)
    const run = await rt.trigger('approve')
    await until(async () => (await rt.getRun(run.id))?.status === 'suspended')
    expect(await completeToken(tokenIdFor(run.id, 'ok'), 'yes')).toBe('completed')
    expect((await rt.waitForRun(run.id)).result).toEqual({ payload: 'yes' })
    const [finished] = await runScheduledTasks('0 2 * * *', { wait: true })
    expect(finished).toMatchObject({ status: 'completed', result: 'ran' })
  })
})

interface Seen {
  method?: string
  url?: string
  headers: IncomingHttpHeaders
  body: string
}

const servers: Server[] = []
afterEach(async () => {
  for (const server of servers.splice(0)) {
    // A server that never answers still holds the client's socket.
    server.closeAllConnections()
    await new Promise((resolve) => server.close(resolve))
  }
})

/** A real HTTP server on port 0, closed after each test. */
async function listen(handler: RequestListener): Promise<{ server: Server; url: string }> {
  const server = createServer(handler)
  servers.push(server)
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` }
}

/** A task server stand-in that records each request and answers with `reply`. */
async function serve(
  reply: (seen: Seen) => { status: number; body: string; type?: string },
): Promise<{ server: Server; url: string; seen: Seen[] }> {
  const seen: Seen[] = []
  const { server, url } = await listen((req, res) => {
    let body = ''
    req.on('data', (chunk) => (body += chunk))
    req.on('end', () => {
      const entry = { method: req.method, url: req.url, headers: req.headers, body }
      seen.push(entry)
      const { status, body: out, type = 'application/json' } = reply(entry)
      res.writeHead(status, { 'content-type': type }).end(out)
    })
  })
  return { server, url, seen }
}

describe('enqueue over HTTP (no active runtime)', () => {
  it('POSTs the payload to SVC_TASK_URL and maps 202 { id, status } to { runId, status, ...rest }', async () => {
    const { url, seen } = await serve(() => ({ status: 202, body: JSON.stringify({ id: 'run-1', status: 'running', queue: 'q1' }) }))
    process.env.SVC_TASK_URL = `${url}/`
    const result = await enqueue('jobs.notify', { to: 'ada' }, { idempotencyKey: 'k-1', delaySeconds: 5, priority: -20 })
    expect(result).toEqual({ runId: 'run-1', status: 'running', queue: 'q1' })
    expect(seen[0]).toMatchObject({ method: 'POST', url: '/__tasks/jobs.notify', body: '{"to":"ada"}' })
    expect(seen[0].headers['content-type']).toBe('application/json')
    expect(seen[0].headers.authorization).toBeUndefined()
    const opts = enqueueOptionsFromHeaders(new Headers(seen[0].headers as Record<string, string>))
    expect(seen[0].headers['svc-priority']).toBe('-20')
    expect(opts).toEqual({ idempotencyKey: 'k-1', delaySeconds: 5, priority: -20 })
  })

  it('uses http://127.0.0.1:$PORT by default and sends no body for no payload', async () => {
    const { url, seen } = await serve(() => ({ status: 202, body: '{"id":"r","status":"running"}' }))
    process.env.PORT = new URL(url).port
    await enqueue('report')
    expect(seen[0].body).toBe('')
    expect(seen[0].headers['content-type']).toBeUndefined()
  })

  it.each([
    ['THEN_TASK_SECRET', 's3cret'],
    ['SVC_TASK_SECRET', 'other'],
  ])('sends Authorization: Bearer <%s> when it is set', async (name, secret) => {
    const { url, seen } = await serve(() => ({ status: 202, body: '{"id":"r","status":"running"}' }))
    process.env.SVC_TASK_URL = url
    process.env[name] = secret
    await enqueue('report')
    expect(seen[0].headers.authorization).toBe(`Bearer ${secret}`)
  })

  it('a non-2xx answer rejects with HttpError carrying the status, the error text and the code', async () => {
    const { url } = await serve(() => ({
      status: 400,
      body: JSON.stringify({ error: 'Validation failed: input.to: Invalid type', code: 'VALIDATION_FAILED', details: [] }),
    }))
    process.env.SVC_TASK_URL = url
    const error = (await enqueue('mail', { to: 1 }).catch((e) => e)) as HttpError
    expect(error).toBeInstanceOf(HttpError)
    expect(error.status).toBe(400)
    expect(error.message).toBe('Validation failed: input.to: Invalid type')
    expect(error.code).toBe('VALIDATION_FAILED')
  })

  it('a 2xx answer without { id, status } is rejected, not guessed at', async () => {
    const { url } = await serve(() => ({ status: 200, body: '{"ok":true}' }))
    process.env.SVC_TASK_URL = url
    await expect(enqueue('report')).rejects.toMatchObject({ status: 200, code: 'BAD_RESPONSE' })
  })

  it('a network failure rejects with HttpError status 0 wrapping the cause', async () => {
    const { server, url } = await serve(() => ({ status: 202, body: '{}' }))
    await new Promise((r) => server.close(r))
    process.env.SVC_TASK_URL = url
    const error = (await enqueue('report').catch((e) => e)) as HttpError
    expect(error).toBeInstanceOf(HttpError)
    expect(error.status).toBe(0)
    expect(error.code).toBe('NETWORK_ERROR')
    expect(error.message).toContain(`could not reach ${url}/__tasks/report`)
    expect(error.cause).toBeDefined()
  })

  it('targets http://127.0.0.1:3000 when neither SVC_TASK_URL nor PORT is set', () => {
    expect(taskServerUrl({})).toBe('http://127.0.0.1:3000')
    expect(taskServerUrl({ PORT: '8080' })).toBe('http://127.0.0.1:8080')
    expect(taskServerUrl({ SVC_TASK_URL: 'https://tasks.example.com/', PORT: '8080' })).toBe('https://tasks.example.com')
  })

  it('a bad delay header is a TypeError naming the header', () => {
    expect(() => enqueueOptionsFromHeaders(new Headers({ 'svc-delay-seconds': 'soon' }))).toThrow(
      /^Header Svc-Delay-Seconds: delaySeconds must be a finite number of seconds, 0 or more \(got "soon"\)$/,
    )
    expect(enqueueOptionsFromHeaders(new Headers())).toEqual({})
  })

  it('bad options are rejected before any request', async () => {
    await expect(enqueue('report', undefined, { delaySeconds: -5 })).rejects.toThrow(/delaySeconds .* \(got -5\)/)
  })

  it('a payload JSON cannot hold is a TypeError naming the call, and nothing is sent', async () => {
    const { url, seen } = await serve(() => ({ status: 202, body: '{"id":"r","status":"running"}' }))
    process.env.SVC_TASK_URL = url
    let deep: unknown[] = []
    for (let i = 1; i < 300; i++) deep = [deep]
    await expect(enqueue('report', { n: 1n })).rejects.toThrow(/^enqueue\("report"\): the payload cannot be stored as JSON: .*BigInt/)
    await expect(enqueue('report', deep)).rejects.toThrow(
      'enqueue("report"): the payload cannot be stored as JSON: it nests arrays and objects deeper than 256 levels',
    )
    await expect(completeToken('tok', { n: 1n })).rejects.toThrow(/^completeToken\("tok"\): the payload cannot be stored as JSON: .*BigInt/)
    expect(seen).toEqual([])
  })

  it('completeToken maps 200, 404 and 409 answers', async () => {
    const answers: Record<string, { status: number; body: string }> = {
      '/__tasks/tokens/ok': { status: 200, body: '{"status":"completed"}' },
      '/__tasks/tokens/gone': { status: 404, body: '{"code":"TOKEN_NOT_FOUND","error":"Unknown token"}' },
      '/__tasks/tokens/done': { status: 409, body: '{"code":"TOKEN_ALREADY_COMPLETED","status":"already_completed"}' },
      '/__tasks/tokens/late': { status: 409, body: '{"code":"TOKEN_TIMED_OUT","status":"timed_out"}' },
      '/__tasks/tokens/boom': { status: 500, body: '{"error":"kaput","code":"INTERNAL_ERROR"}' },
    }
    const { url, seen } = await serve((s) => answers[s.url!])
    process.env.SVC_TASK_URL = url
    expect(await completeToken('ok', { approved: true })).toBe('completed')
    expect(seen[0].body).toBe('{"approved":true}')
    expect(await completeToken('gone')).toBe('not_found')
    expect(await completeToken('done')).toBe('already_completed')
    expect(await completeToken('late')).toBe('timed_out')
    await expect(completeToken('boom')).rejects.toMatchObject({ status: 500, message: 'kaput' })
  })
})

describe('enqueue over HTTP: timeouts and redirects', () => {
  it('rejects with HttpError status 0 and code TIMEOUT when the server does not answer in time', async () => {
    process.env.SVC_TASK_URL = (
      await listen(() => {
        // Never answers.
      })
    ).url
    process.env.SVC_TASK_TIMEOUT_MS = '100'
    const error = await enqueue('report', { a: 1 }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(HttpError)
    expect(error).toMatchObject({ status: 0, code: 'TIMEOUT' })
    expect((error as Error).message).toMatch(/did not answer within 100 ms.*idempotencyKey/)
    await expect(completeToken('run:key', { ok: true })).rejects.toMatchObject({ status: 0, code: 'TIMEOUT' })
  })

  it('does not follow a redirect, which would turn the POST into a GET', async () => {
    const target = await serve(() => ({ status: 202, body: '{"id":"x","status":"running"}' }))
    process.env.SVC_TASK_URL = (await listen((_req, res) => res.writeHead(302, { location: `${target.url}/__tasks/report` }).end())).url
    await expect(enqueue('report', { a: 1 })).rejects.toMatchObject({ status: 302 })
    expect(target.seen).toHaveLength(0)
  })

  it('rejects a SVC_TASK_TIMEOUT_MS that is not a positive number', async () => {
    process.env.SVC_TASK_URL = 'http://127.0.0.1:9'
    process.env.SVC_TASK_TIMEOUT_MS = 'soon'
    await expect(enqueue('report')).rejects.toThrow('SVC_TASK_TIMEOUT_MS must be a positive number of milliseconds (got "soon")')
  })
})

// Over HTTP the idempotency key travels in the Idempotency-Key header, which
// holds bytes, not any string. A key it cannot carry is the caller's
// mistake: it must say so, not report that the server could not be reached
// (HttpError status 0, "Is the task server running?") while the server is up.
describe('enqueue over HTTP: an idempotency key a header cannot carry', () => {
  const accepted = () => ({ status: 202, body: '{"id":"run-1","status":"running"}' })

  it('is a TypeError naming the option, and nothing is sent', async () => {
    const { url, seen } = await serve(accepted)
    const error = await enqueueOverHttp('orders.sync', {}, { idempotencyKey: 'commande-日本' }, { SVC_TASK_URL: url }).catch((e) => e)
    expect(error).not.toBeInstanceOf(HttpError)
    expect(error).toBeInstanceOf(TypeError)
    expect(error.message).toBe(
      'enqueue("orders.sync"): idempotencyKey must be text an HTTP header can carry (Latin-1, no line breaks, no space or tab at either end) to be sent to the task server (got "commande-日本")',
    )
    expect(seen).toEqual([])
  })

  it('a line break is refused the same way', async () => {
    const { url } = await serve(accepted)
    await expect(enqueueOverHttp('orders.sync', {}, { idempotencyKey: 'a\nb' }, { SVC_TASK_URL: url })).rejects.toThrow(
      /idempotencyKey must be text an HTTP header can carry/,
    )
  })

  it('a space or tab at either end is refused the same way: Fetch strips it, so another key would arrive', async () => {
    const { url, seen } = await serve(accepted)
    for (const key of [' order-7', 'order-7 ', '\torder-7']) {
      await expect(enqueueOverHttp('orders.sync', {}, { idempotencyKey: key }, { SVC_TASK_URL: url })).rejects.toThrow(
        /idempotencyKey must be text an HTTP header can carry .*no space or tab at either end/,
      )
    }
    expect(seen).toEqual([])
    await enqueueOverHttp('orders.sync', {}, { idempotencyKey: 'order 7' }, { SVC_TASK_URL: url })
    expect(seen[0].headers['idempotency-key']).toBe('order 7')
  })

  it('ASCII and Latin-1 keys are sent as they are', async () => {
    const { url, seen } = await serve(accepted)
    expect(await enqueueOverHttp('orders.sync', {}, { idempotencyKey: 'order-42-München' }, { SVC_TASK_URL: url })).toEqual({
      runId: 'run-1',
      status: 'running',
    })
    // Node reads header bytes as Latin-1, so the key arrives unchanged.
    expect(seen[0].headers['idempotency-key']).toBe('order-42-München')
  })

  it('a server that is down is still a network error', async () => {
    const { server, url } = await serve(accepted)
    await new Promise((resolve) => server.close(resolve))
    await expect(enqueueOverHttp('orders.sync', {}, { idempotencyKey: 'k' }, { SVC_TASK_URL: url })).rejects.toMatchObject({
      status: 0,
      code: 'NETWORK_ERROR',
    })
  })

  it.each([
    ['a host and port without a scheme', 'tasks.internal:3000'],
    ['text that is no URL at all', 'tasks internal'],
  ])('%s in SVC_TASK_URL is a TypeError that shows it, not a network error', async (_, base) => {
    const error = await enqueueOverHttp('orders.sync', {}, undefined, { SVC_TASK_URL: base }).catch((e) => e)
    expect(error).toBeInstanceOf(TypeError)
    expect(error.message).toContain(`enqueue("orders.sync"): cannot build a request to ${base}/__tasks/orders.sync: `)
  })
})

// completeToken resolves to 'not_found', 'already_completed' or 'timed_out'
// only for what the task server says about the token (TOKEN_NOT_FOUND,
// TOKEN_ALREADY_COMPLETED, TOKEN_TIMED_OUT), as the README documents. Any
// other 404 or 409 (SVC_TASK_URL pointing at the wrong server or path, a
// proxy) is not an answer about the token and must reject, never be
// swallowed into a plausible result.
describe('completeToken over HTTP: answers that are not about the token', () => {
  const answer = async (status: number, body: string, type?: string) => (await serve(() => ({ status, body, type }))).url

  it('a 404 page from another server rejects with HttpError instead of not_found', async () => {
    const url = await answer(404, '<html><body>Cannot POST /__tasks/tokens/t</body></html>', 'text/html')
    const error = (await completeTokenOverHttp('t', undefined, { SVC_TASK_URL: url }).catch((e) => e)) as HttpError
    expect(error).toBeInstanceOf(HttpError)
    expect(error.status).toBe(404)
    expect(error.message).toContain('Cannot POST')
  })

  it('a 404 with another JSON error code rejects too', async () => {
    const url = await answer(404, '{"error":"No such route","code":"ROUTE_MISSING"}')
    await expect(completeTokenOverHttp('t', undefined, { SVC_TASK_URL: url })).rejects.toMatchObject({ status: 404, code: 'ROUTE_MISSING' })
  })

  it('a 409 that does not speak of the token rejects instead of already_completed', async () => {
    const url = await answer(409, '{"error":"Edit conflict","code":"CONFLICT"}')
    await expect(completeTokenOverHttp('t', undefined, { SVC_TASK_URL: url })).rejects.toMatchObject({ status: 409, code: 'CONFLICT' })
  })

  it("the task server's own answers still map to results", async () => {
    const cases: [number, string, string][] = [
      [404, '{"code":"TOKEN_NOT_FOUND","error":"No waitForToken is waiting on token \\"t\\""}', 'not_found'],
      [409, '{"code":"TOKEN_ALREADY_COMPLETED","status":"already_completed"}', 'already_completed'],
      [409, '{"code":"TOKEN_TIMED_OUT","status":"timed_out"}', 'timed_out'],
    ]
    for (const [status, body, result] of cases) {
      const url = await answer(status, body)
      expect(await completeTokenOverHttp('t', undefined, { SVC_TASK_URL: url })).toBe(result)
    }
  })
})
