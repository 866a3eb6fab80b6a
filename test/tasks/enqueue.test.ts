import { createServer, type IncomingHttpHeaders, type Server } from 'node:http'
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
import { runtime, task, until } from './_helpers.ts'

const ENV_KEYS = ['SVC_TASK_URL', 'PORT', 'THEN_TASK_SECRET', 'SVC_TASK_SECRET'] as const
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

async function serve(reply: (seen: Seen) => { status: number; body: string }): Promise<{ server: Server; url: string; seen: Seen[] }> {
  const seen: Seen[] = []
  const server = createServer((req, res) => {
    let body = ''
    req.on('data', (chunk) => (body += chunk))
    req.on('end', () => {
      const entry = { method: req.method, url: req.url, headers: req.headers, body }
      seen.push(entry)
      const { status, body: out } = reply(entry)
      res.writeHead(status, { 'content-type': 'application/json' }).end(out)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return { server, url: `http://127.0.0.1:${port}`, seen }
}

const servers: Server[] = []
afterEach(async () => {
  for (const s of servers.splice(0)) await new Promise((r) => s.close(r))
})

describe('enqueue over HTTP (no active runtime)', () => {
  it('POSTs the payload to SVC_TASK_URL and maps 202 { id, status } to { runId, status, ...rest }', async () => {
    const { server, url, seen } = await serve(() => ({ status: 202, body: JSON.stringify({ id: 'run-1', status: 'running', queue: 'q1' }) }))
    servers.push(server)
    process.env.SVC_TASK_URL = `${url}/`
    const result = await enqueue('jobs.notify', { to: 'ada' }, { idempotencyKey: 'k-1', delaySeconds: 5 })
    expect(result).toEqual({ runId: 'run-1', status: 'running', queue: 'q1' })
    expect(seen[0]).toMatchObject({ method: 'POST', url: '/__tasks/jobs.notify', body: '{"to":"ada"}' })
    expect(seen[0].headers['content-type']).toBe('application/json')
    expect(seen[0].headers.authorization).toBeUndefined()
    const opts = enqueueOptionsFromHeaders(new Headers(seen[0].headers as Record<string, string>))
    expect(opts).toEqual({ idempotencyKey: 'k-1', delaySeconds: 5 })
  })

  it('uses http://127.0.0.1:$PORT by default and sends no body for no payload', async () => {
    const { server, url, seen } = await serve(() => ({ status: 202, body: '{"id":"r","status":"running"}' }))
    servers.push(server)
    process.env.PORT = new URL(url).port
    await enqueue('report')
    expect(seen[0].body).toBe('')
    expect(seen[0].headers['content-type']).toBeUndefined()
  })

  it.each([
    ['THEN_TASK_SECRET', 's3cret'],
    ['SVC_TASK_SECRET', 'other'],
  ])('sends Authorization: Bearer <%s> when it is set', async (name, secret) => {
    const { server, url, seen } = await serve(() => ({ status: 202, body: '{"id":"r","status":"running"}' }))
    servers.push(server)
    process.env.SVC_TASK_URL = url
    process.env[name] = secret
    await enqueue('report')
    expect(seen[0].headers.authorization).toBe(`Bearer ${secret}`)
  })

  it('a non-2xx answer rejects with HttpError carrying the status, the error text and the code', async () => {
    const { server, url } = await serve(() => ({
      status: 400,
      body: JSON.stringify({ error: 'Validation failed: input.to: Invalid type', code: 'VALIDATION_FAILED', details: [] }),
    }))
    servers.push(server)
    process.env.SVC_TASK_URL = url
    const error = (await enqueue('mail', { to: 1 }).catch((e) => e)) as HttpError
    expect(error).toBeInstanceOf(HttpError)
    expect(error.status).toBe(400)
    expect(error.message).toBe('Validation failed: input.to: Invalid type')
    expect(error.code).toBe('VALIDATION_FAILED')
  })

  it('a 2xx answer without { id, status } is rejected, not guessed at', async () => {
    const { server, url } = await serve(() => ({ status: 200, body: '{"ok":true}' }))
    servers.push(server)
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
    const { server, url, seen } = await serve(() => ({ status: 202, body: '{"id":"r","status":"running"}' }))
    servers.push(server)
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
    const { server, url, seen } = await serve((s) => answers[s.url!])
    servers.push(server)
    process.env.SVC_TASK_URL = url
    expect(await completeToken('ok', { approved: true })).toBe('completed')
    expect(seen[0].body).toBe('{"approved":true}')
    expect(await completeToken('gone')).toBe('not_found')
    expect(await completeToken('done')).toBe('already_completed')
    expect(await completeToken('late')).toBe('timed_out')
    await expect(completeToken('boom')).rejects.toMatchObject({ status: 500, message: 'kaput' })
  })
})
