/**
 * Callback URLs (`ctx.step.createCallback`) over a real server on port 0:
 * a client holding no secret wakes the run once with JSON, a form, text or
 * a GET's query; a used, expired, altered or re-signed URL wakes nothing.
 */
import { describe, expect, it } from 'vitest'
import { MemoryRunStore, type RuntimeApiRoute, type TaskContext } from '../../src/index.ts'
import { serve, until } from './_helpers.ts'

const SECRET = 's3cret-0123456789abcdef0123456789ab'
const AUTH = { authorization: `Bearer ${SECRET}` }
/** The public address the URLs are made with: a prefix the test's server does not have, as behind a proxy. */
const PUBLIC = 'https://app.example.com/shop'

const urls = new Map<string, string>()

const ROUTES: RuntimeApiRoute[] = [
  {
    path: '/api/pay',
    module: {
      kind: 'task',
      POST: async (ctx: TaskContext<{ timeout?: number; method?: 'GET' | 'POST'; slow?: boolean }>) => {
        const callback = await ctx.step.createCallback('paid', { timeoutSeconds: ctx.input.timeout ?? 60, method: ctx.input.method })
        await ctx.step.run('hand-out', () => void urls.set(ctx.runId, callback.url))
        // A while before it waits: a quick sender's request comes first.
        if (ctx.input.slow) await ctx.step.sleep('busy', 1)
        return callback.wait()
      },
    },
  },
]

type Server = Awaited<ReturnType<typeof serve>>

const start = (env: Record<string, string> = { SVC_PUBLIC_URL: PUBLIC }) =>
  serve({ apiRoutes: ROUTES, env: { NODE_ENV: 'production', SVC_TASK_SECRET: SECRET, ...env }, store: new MemoryRunStore() })

async function run(server: Server, input: Record<string, unknown> = {}) {
  const res = await fetch(`${server.url}/__tasks/pay`, {
    method: 'POST',
    headers: { ...AUTH, 'content-type': 'application/json' },
    body: JSON.stringify(input),
  })
  const { id } = (await res.json()) as { id: string }
  await until(async () => (await record(server, id)).status === 'suspended')
  const url = urls.get(id)!
  expect(url.startsWith(`${PUBLIC}/__tasks/callbacks/cb1.`)).toBe(true)
  // The server is reached as the proxy would reach it: the public prefix off.
  return { id, url: url.replace(PUBLIC, server.url) }
}

const record = async (server: Server, id: string) =>
  (await (await fetch(`${server.url}/__tasks/runs/${id}`, { headers: AUTH })).json()) as Record<string, any>

const call = async (url: string, init: RequestInit = {}) => {
  const res = await fetch(url, { method: 'POST', ...init })
  return { status: res.status, body: (await res.json()) as Record<string, unknown> }
}

describe('callback URLs', () => {
  it('a client with no secret wakes the run once with its JSON body; the URL is then used', async () => {
    const server = await start()
    const { id, url } = await run(server)
    const sent = await call(url, {
      headers: { 'content-type': 'application/json', authorization: 'Bearer someone-else', 'x-signature': 'v1=abc' },
      body: JSON.stringify({ paid: 42 }),
    })
    expect(sent).toEqual({ status: 202, body: { ok: true, status: 'received' } })
    const done = await until(async () => {
      const current = await record(server, id)
      return current.status === 'completed' && current
    })
    expect(done.result).toMatchObject({
      method: 'POST',
      body: { paid: 42 },
      headers: { 'x-signature': 'v1=abc' },
      receivedAt: expect.any(String),
    })
    expect(done.result.headers.authorization).toBeUndefined()
    expect(await call(url, { body: '{}' })).toMatchObject({ status: 409, body: { code: 'CALLBACK_USED' } })
  })

  it('keeps a request that comes before the run waits, and refuses a body that is not the JSON it says, waking nothing', async () => {
    const server = await start()
    const { id, url } = await run(server, { slow: true })
    expect((await record(server, id)).suspended.waitpoint.type).toBe('sleep')
    const bad = await call(url, { headers: { 'content-type': 'application/json' }, body: '{nope' })
    expect(bad).toMatchObject({ status: 400, body: { code: 'INVALID_JSON' } })
    expect(await call(url, { headers: { 'content-type': 'application/json' }, body: '{"early":true}' })).toMatchObject({ status: 202 })
    const done = await until(async () => {
      const current = await record(server, id)
      return current.status === 'completed' && current
    }, 5000)
    expect(done.result.body).toEqual({ early: true })
  })

  it('keeps a form as its fields and other bodies as text, and a GET callback its query', async () => {
    const server = await start()
    const form = await run(server)
    expect((await call(form.url, { headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'a=1&b=two' })).status).toBe(202)
    const text = await run(server)
    expect((await call(text.url, { headers: { 'content-type': 'text/plain' }, body: 'hello' })).status).toBe(202)
    const get = await run(server, { method: 'GET' })
    expect(await call(get.url, { body: '{}' })).toMatchObject({ status: 405 })
    expect((await call(`${get.url}?approve=yes`, { method: 'GET' })).status).toBe(202)
    const results = await until(async () => {
      const runs = await Promise.all([form.id, text.id, get.id].map((id) => record(server, id)))
      return runs.every((current) => current.status === 'completed') && runs.map((current) => current.result.body)
    })
    expect(results).toEqual([{ a: '1', b: 'two' }, 'hello', { approve: 'yes' }])
  })

  it('wakes nothing with an altered, re-signed, unknown or expired URL', async () => {
    const server = await start()
    const { id, url } = await run(server)
    const other = await run(server)
    const [base, token] = url.split('/__tasks/callbacks/')
    const [payload, signature] = token.slice('cb1.'.length).split('.')
    const flipped = `${signature.slice(0, -2)}${signature.at(-2) === 'A' ? 'B' : 'A'}${signature.at(-1)}`
    const otherSignature = other.url.split('.').at(-1)
    for (const bad of [
      `${base}/__tasks/callbacks/cb1.${payload}.${flipped}`,
      `${base}/__tasks/callbacks/cb1.${payload}.${otherSignature}`,
      `${base}/__tasks/callbacks/cb1.e30.${signature}`,
      `${base}/__tasks/callbacks/nothing`,
    ]) {
      expect(await call(bad, { body: '1' })).toMatchObject({ status: 401, body: { code: 'CALLBACK_INVALID' } })
    }
    expect((await record(server, id)).status).toBe('suspended')

    const short = await run(server, { timeout: 1 })
    await until(async () => (await record(server, short.id)).status === 'completed', 5000)
    expect((await record(server, short.id)).result).toEqual({ timedOut: true })
    expect(await call(short.url, { body: '1' })).toMatchObject({ status: 410, body: { code: 'CALLBACK_EXPIRED' } })
  })

  it('fails the attempt, naming SVC_PUBLIC_URL, where the app has no public address', async () => {
    const server = await start({})
    const res = await fetch(`${server.url}/__tasks/pay`, {
      method: 'POST',
      headers: { ...AUTH, 'content-type': 'application/json' },
      body: '{}',
    })
    const { id } = (await res.json()) as { id: string }
    const failed = await until(async () => {
      const current = await record(server, id)
      return current.attempts.length > 0 && current
    })
    expect(failed.attempts[0].error).toMatch(/set SVC_PUBLIC_URL to the address callers reach this app at/)
  })
})
