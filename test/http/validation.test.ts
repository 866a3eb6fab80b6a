import * as v from 'valibot'
import { z } from 'zod'
import { describe, expect, it } from 'vitest'
import { createApiApp, defineSchema, type RuntimeApiRoute } from '../../src/index.ts'
import { recordingLogger, serve } from './_helpers.ts'

let calls = 0
const routes: RuntimeApiRoute[] = [
  {
    path: '/api/items/:id',
    module: {
      schema: defineSchema({
        params: v.object({ id: v.pipe(v.string(), v.regex(/^\d+$/), v.transform(Number)) }),
        query: v.object({ verbose: v.optional(v.picklist(['yes', 'no'])) }),
        headers: v.object({ 'x-tenant': v.string() }),
        body: v.object({ name: v.pipe(v.string(), v.minLength(1)), tags: v.optional(v.array(v.string()), []) }),
      }),
      GET: (req) => {
        calls++
        return {
          param: req.valid('param'),
          query: req.valid('query'),
          header: req.valid('header')['x-tenant'],
          json: req.valid('json') ?? null,
        }
      },
      POST: async (req) => {
        calls++
        // The body was read for validation; the handler can still read it.
        return { valid: req.valid('json'), raw: await req.json(), param: req.valid('param') }
      },
      DELETE: (req) => ({ json: req.valid('json') ?? null }),
    },
  },
  {
    path: '/api/zod',
    module: { schema: defineSchema({ query: z.object({ n: z.coerce.number().int() }) }), GET: (req) => req.valid('query') },
  },
]

const headers = { 'content-type': 'application/json', 'x-tenant': 'acme' }

describe('route schema validation', () => {
  it('validates params, query, headers and body before the handler and hands over the validated values', async () => {
    const app = createApiApp({ routes })
    const res = await app.request('/api/items/7?verbose=yes', { method: 'POST', headers, body: JSON.stringify({ name: 'box' }) })
    expect(res.status).toBe(200)
    expect(await res.json()).toEqual({ valid: { name: 'box', tags: [] }, raw: { name: 'box' }, param: { id: 7 } })
  })

  it('skips the body on GET and validates the rest', async () => {
    const res = await createApiApp({ routes }).request('/api/items/3', { headers })
    expect(await res.json()).toEqual({ param: { id: 3 }, query: {}, header: 'acme', json: null })
  })

  it('validates a DELETE body only when the request carries one', async () => {
    const app = createApiApp({ routes })
    const none = await app.request('/api/items/3', { method: 'DELETE', headers: { 'x-tenant': 'acme' } })
    expect(none.status).toBe(200)
    const bad = await app.request('/api/items/3', { method: 'DELETE', headers, body: '{"name":""}' })
    expect(bad.status).toBe(400)
  })

  it('answers 400 VALIDATION_FAILED listing every issue of every part, without calling the handler', async () => {
    calls = 0
    const res = await createApiApp({ routes }).request('/api/items/abc?verbose=maybe', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: '', tags: [1] }),
    })
    expect(res.status).toBe(400)
    const body = await res.json()
    expect(body.code).toBe('VALIDATION_FAILED')
    expect(typeof body.error).toBe('string')
    const where = body.details.map((d: { target: string; path: unknown[] }) => `${d.target}:${d.path.join('.')}`)
    expect(where).toEqual(expect.arrayContaining(['params:id', 'query:verbose', 'headers:x-tenant', 'body:name', 'body:tags.0']))
    expect(calls).toBe(0)
  })

  it('answers malformed JSON with 400 INVALID_JSON, not a validation issue', async () => {
    const res = await createApiApp({ routes }).request('/api/items/1', { method: 'POST', headers, body: '{"name":' })
    expect(res.status).toBe(400)
    expect((await res.json()).code).toBe('INVALID_JSON')
  })

  it('answers JSON nested deeper than 256 levels with 400 INVALID_JSON giving the limit, without calling the handler', async () => {
    const app = createApiApp({ routes })
    const before = calls
    for (const depth of [257, 5000]) {
      const body = `{"name":"n","tags":${'['.repeat(depth - 1)}${']'.repeat(depth - 1)}}`
      const res = await app.request('/api/items/1', { method: 'POST', headers, body })
      expect(res.status).toBe(400)
      expect(await res.json()).toEqual({
        code: 'INVALID_JSON',
        error: 'Request body nests arrays and objects deeper than 256 levels, the limit',
      })
    }
    expect(calls).toBe(before)
    // Exactly at the limit the body is read and validated as usual.
    const deepest = `{"name":"n","tags":${'['.repeat(255)}${']'.repeat(255)}}`
    const res = await app.request('/api/items/1', { method: 'POST', headers, body: deepest })
    expect((await res.json()).code).toBe('VALIDATION_FAILED')
  })

  it('answers a body over the limit with 413 PAYLOAD_TOO_LARGE', async () => {
    const app = createApiApp({ routes, bodyLimit: 64 })
    const res = await app.request('/api/items/1', { method: 'POST', headers, body: JSON.stringify({ name: 'x'.repeat(100) }) })
    expect(res.status).toBe(413)
    expect((await res.json()).code).toBe('PAYLOAD_TOO_LARGE')
  })

  it('accepts any Standard Schema library (zod coerces the query here)', async () => {
    const app = createApiApp({ routes })
    expect(await (await app.request('/api/zod?n=12')).json()).toEqual({ n: 12 })
    expect((await app.request('/api/zod?n=1.5')).status).toBe(400)
  })

  it('validates the same way behind startSvcServer', async () => {
    const server = await serve({ apiRoutes: routes, logger: recordingLogger() })
    const ok = await fetch(`${server.url}/api/items/5`, { method: 'POST', headers, body: '{"name":"n"}' })
    expect(await ok.json()).toMatchObject({ valid: { name: 'n', tags: [] }, param: { id: 5 } })
    const bad = await fetch(`${server.url}/api/items/5`, { method: 'POST', headers, body: '{}' })
    expect(bad.status).toBe(400)
    expect((await bad.json()).details).toEqual([{ target: 'body', path: ['name'], message: expect.any(String) }])
  })
})
