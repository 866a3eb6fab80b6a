/**
 * `GET /__tasks/runs/<id>/stream` over a real server on port 0: one run's
 * progress as Server-Sent Events (its state, then each change, ending
 * once it finishes), who may read it (a run token for that run, or the
 * admin's own auth), the pages of other origins that may (CORS), the
 * limits it shares with `GET /__tasks/events`, and the data chunks the run
 * sends (`ctx.stream`) as `event: chunk`.
 */
import { describe, expect, it } from 'vitest'
import { createRunToken, createTaskRuntime, type RunStatus, tokenIdFor } from '../../src/index.ts'
import { signRunToken } from '../../src/runtime/admin/run-token.ts'
import { chunkOf, eventReader, reportApp, SECRET, type StreamEvent } from '../client/_runs.ts'
import { serve, type TestServerOptions, until } from './_helpers.ts'

type Server = Awaited<ReturnType<typeof serve>>

const APP = 'https://app.example.com'
const ADMIN = { authorization: `Bearer ${SECRET}` }
const PRODUCTION = { NODE_ENV: 'production', SVC_TASK_SECRET: SECRET, SVC_REALTIME_ORIGINS: `${APP}, https://admin.example.com` }

async function start(options: TestServerOptions = {}) {
  const app = reportApp()
  const server = await serve({ apiRoutes: app.routes, env: PRODUCTION, ...options })
  return { server, gates: app.gates }
}

async function trigger(server: Server, task: string): Promise<string> {
  const res = await fetch(`${server.url}/__tasks/${task}`, { method: 'POST', headers: ADMIN })
  expect(res.status).toBe(202)
  return ((await res.json()) as { id: string }).id
}

async function reached(server: Server, id: string, status: RunStatus): Promise<void> {
  await until(
    async () => ((await (await fetch(`${server.url}/__tasks/${id}`, { headers: ADMIN })).json()) as { status: string }).status === status,
  )
}

function stream(server: Server, id: string, headers: Record<string, string> = {}, path = `/__tasks/runs/${id}/stream`): Promise<Response> {
  return fetch(`${server.url}${path}`, { headers })
}

const bearer = (token: string) => ({ authorization: `Bearer ${token}` })

/** Events of `reader` up to and with the first that `done` accepts. */
async function readUntil(reader: ReturnType<typeof eventReader>, done: (event: StreamEvent) => boolean): Promise<StreamEvent[]> {
  const events: StreamEvent[] = []
  for (;;) {
    const event = await reader.next()
    if (!event) throw new Error(`the stream ended after ${JSON.stringify(events)}`)
    events.push(event)
    if (done(event)) return events
  }
}

describe('GET /__tasks/runs/<id>/stream', () => {
  it('sends the run as it is, then each change, and ends after the event of its finished status', async () => {
    const { server, gates } = await start()
    const id = await trigger(server, 'jobs.report')
    await reached(server, id, 'suspended')
    const res = await stream(server, id, bearer(await createRunToken(id, { secret: SECRET })))
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/)
    expect(res.headers.get('cache-control')).toBe('no-store')
    const events = eventReader(res.body!)

    const first = await events.next()
    expect(first).toEqual({
      data: {
        id,
        taskName: 'jobs.report',
        status: 'suspended',
        steps: { fetch: { status: 'completed', kind: 'run' } },
        // A suspended attempt is not one that ended.
        attempts: 0,
        createdAt: expect.any(String),
        startedAt: expect.any(String),
      },
    })

    // The token is met: the run resumes, and waits in its last step until the test lets it go.
    const completed = await fetch(`${server.url}/__tasks/tokens/${encodeURIComponent(tokenIdFor(id, 'approve'))}`, {
      method: 'POST',
      headers: { ...ADMIN, 'content-type': 'application/json' },
      body: JSON.stringify({ by: 'ada' }),
    })
    expect(completed.status).toBe(200)
    const resumed = await readUntil(events, (event) => 'approve' in event.data.steps)
    for (const event of resumed) expect(event.data.status).toBe('running')
    expect(resumed.at(-1)!.data.steps).toEqual({
      fetch: { status: 'completed', kind: 'run' },
      approve: { status: 'completed', kind: 'waitForToken' },
    })

    gates.render.resolve()
    const last = (await readUntil(events, (event) => event.data.status !== 'running')).at(-1)!
    expect(last.id).toBe('done')
    expect(last.data).toMatchObject({
      status: 'completed',
      result: { pages: 3 },
      steps: { fetch: { status: 'completed' }, approve: { status: 'completed' }, render: { status: 'completed', kind: 'run' } },
      finishedAt: expect.any(String),
    })
    // Nor the input nor step outputs reach the page.
    expect(JSON.stringify(last.data)).not.toMatch(/"pdf"|"ada"|input|output/)
    expect(await events.next()).toBeUndefined()
  })

  it('sends a failed run once, with the error of its last attempt, and ends', async () => {
    const { server } = await start()
    const id = await trigger(server, 'jobs.doomed')
    await reached(server, id, 'failed')
    const events = eventReader((await stream(server, id, bearer(await createRunToken(id, { secret: SECRET })))).body!)
    expect(await events.next()).toMatchObject({
      id: 'done',
      data: { status: 'failed', error: 'out of paper', steps: { try: { status: 'completed', kind: 'run' } }, attempts: 1 },
    })
    expect(await events.next()).toBeUndefined()
  })

  it('sends the steps a run records while its status stays, within about a second of each', async () => {
    const { server, gates } = await start()
    const id = await trigger(server, 'jobs.progress')
    await until(async () => {
      const run = (await (await fetch(`${server.url}/__tasks/${id}`, { headers: ADMIN })).json()) as { steps: object }
      return 'first' in run.steps
    })
    const events = eventReader((await stream(server, id, bearer(await createRunToken(id, { secret: SECRET })))).body!)
    expect((await events.next())!.data).toMatchObject({ status: 'running', steps: { first: { status: 'completed' } } })
    gates.second.resolve()
    const started = Date.now()
    const second = (await readUntil(events, (event) => 'second' in event.data.steps)).at(-1)!
    expect(second.data.status).toBe('running')
    expect(Date.now() - started).toBeLessThan(2500)
    gates.third.resolve()
    const last = (await readUntil(events, (event) => event.data.status === 'completed')).at(-1)!
    expect(Object.keys(last.data.steps)).toEqual(['first', 'second', 'third'])
    expect(last.data.result).toBe('done')
  })

  it('is also GET /__tasks/<id>/stream, and takes the token as ?token=, as EventSource sends it', async () => {
    const { server } = await start()
    const id = await trigger(server, 'jobs.doomed')
    await reached(server, id, 'failed')
    const token = await createRunToken(id, { secret: SECRET })
    for (const path of [`/__tasks/${id}/stream?token=${token}`, `/__tasks/runs/${id}/stream/?token=${token}`]) {
      const res = await stream(server, id, {}, path)
      expect(res.status, path).toBe(200)
      expect((await eventReader(res.body!).next())?.data.status).toBe('failed')
    }
  })

  it('takes the task secret as the bearer, as the rest of the admin surface does', async () => {
    const { server } = await start()
    const id = await trigger(server, 'jobs.doomed')
    await reached(server, id, 'failed')
    const res = await stream(server, id, ADMIN)
    expect(res.status).toBe(200)
    expect((await eventReader(res.body!).next())?.data.status).toBe('failed')
  })

  it('answers an EventSource that saw the end (Last-Event-ID: done) with 204, which tells it to stop', async () => {
    const { server } = await start()
    const id = await trigger(server, 'jobs.doomed')
    const res = await stream(server, id, { ...bearer(await createRunToken(id, { secret: SECRET })), 'last-event-id': 'done' })
    expect(res.status).toBe(204)
  })

  it('answers HEAD with the headers of the stream and no body', async () => {
    const { server } = await start()
    const id = await trigger(server, 'jobs.doomed')
    const res = await fetch(`${server.url}/__tasks/runs/${id}/stream`, { method: 'HEAD', headers: ADMIN })
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/)
    expect(await res.text()).toBe('')
  })

  it('answers other methods with 405 and Allow', async () => {
    const { server } = await start()
    const res = await fetch(`${server.url}/__tasks/runs/some-id/stream`, { method: 'POST', headers: ADMIN })
    expect(res.status).toBe(405)
    expect(res.headers.get('allow')).toBe('GET, HEAD, OPTIONS')
    expect((await res.json()).code).toBe('METHOD_NOT_ALLOWED')
  })
})

describe('who may read a run', () => {
  it('refuses a token for another run, an expired one, a forged one and one of the retired format with 401 and the reason as its code', async () => {
    const { server } = await start()
    const id = await trigger(server, 'jobs.doomed')
    const other = await trigger(server, 'jobs.doomed')
    const valid = await createRunToken(id, { secret: SECRET })
    const [prefix, payload, signature] = valid.split('.')
    const cases: [string, string, RegExp][] = [
      [await createRunToken(other, { secret: SECRET }), 'RUN_TOKEN_WRONG_RUN', /for another run/],
      [await signRunToken(id, Math.floor(Date.now() / 1000) - 1, SECRET), 'RUN_TOKEN_EXPIRED', /expired at .* ask the app for a new one/],
      [await createRunToken(id, { secret: 'another-secret' }), 'RUN_TOKEN_INVALID', /not signed with the task secret/],
      [`${prefix}.${payload}x.${signature}`, 'RUN_TOKEN_INVALID', /not signed with the task secret/],
      ['not-a-token', 'RUN_TOKEN_INVALID', /starts with "rt2\."/],
      // The first format, keyed with the secret itself: made again, not taken.
      [`rt1.${payload}.${signature}`, 'RUN_TOKEN_INVALID', /retired "rt1\." format.*must be made again/],
      [`${valid}${'A'.repeat(600)}`, 'RUN_TOKEN_INVALID', /more than a run token has/],
    ]
    for (const [token, code, message] of cases) {
      for (const res of [
        await stream(server, id, bearer(token)),
        await stream(server, id, {}, `/__tasks/runs/${id}/stream?token=${token}`),
      ]) {
        expect(res.status, code).toBe(401)
        expect(res.headers.get('www-authenticate')).toBe('Bearer realm="svc", error="invalid_token"')
        const body = await res.json()
        expect(body.code).toBe(code)
        expect(body.error).toMatch(message)
      }
    }
  })

  it('refuses a request without credentials with 401 saying what to send', async () => {
    const { server } = await start()
    const id = await trigger(server, 'jobs.doomed')
    const res = await stream(server, id)
    expect(res.status).toBe(401)
    expect(res.headers.get('www-authenticate')).toBe('Bearer realm="svc"')
    const body = await res.json()
    expect(body.code).toBe('UNAUTHORIZED')
    expect(body.error).toMatch(
      /Send a run token \(from createRunToken\(\) on the server\) as \?token=<token> or Authorization: Bearer <token>/,
    )
  })

  it('answers RUN_NOT_FOUND for an unknown run, only to a reader with a token for it', async () => {
    const { server } = await start()
    const missing = '0195f3a2-7c1e-7b4a-9f00-5d8e2c1a4b6d'
    expect((await stream(server, missing)).status).toBe(401)
    const res = await stream(server, missing, bearer(await createRunToken(missing, { secret: SECRET })))
    expect(res.status).toBe(404)
    expect(await res.json()).toEqual({ code: 'RUN_NOT_FOUND', error: `No run has id "${missing}"` })
  })

  it('cannot check tokens on a server without a task secret, and says to set one', async () => {
    const { server } = await start({ env: { NODE_ENV: 'production' } })
    const res = await stream(server, 'some-id', bearer(await createRunToken('some-id', { secret: SECRET })))
    expect(res.status).toBe(401)
    expect((await res.json()).error).toMatch(/No task secret is configured, so run tokens cannot be checked: set SVC_TASK_SECRET/)
  })

  it('in development without a secret, lets the developer read without credentials, as the admin surface does', async () => {
    const { server } = await start({ env: { NODE_ENV: 'development' } })
    const created = await fetch(`${server.url}/__tasks/jobs.doomed`, { method: 'POST' })
    const { id } = (await created.json()) as { id: string }
    await until(async () => ((await (await fetch(`${server.url}/__tasks/${id}`)).json()) as { status: string }).status === 'failed')
    const res = await stream(server, id)
    expect(res.status).toBe(200)
    expect((await eventReader(res.body!).next())?.data.status).toBe('failed')
    // A page of another site is still refused, with the reason.
    const foreign = await stream(server, id, { origin: APP })
    expect(foreign.status).toBe(403)
    expect((await foreign.json()).code).toBe('FORBIDDEN')
  })
})

describe('pages of other origins (CORS)', () => {
  const preflight = (server: Server, origin: string, headers: Record<string, string> = {}) =>
    fetch(`${server.url}/__tasks/runs/some-id/stream`, {
      method: 'OPTIONS',
      headers: { origin, 'access-control-request-method': 'GET', 'access-control-request-headers': 'authorization', ...headers },
    })

  it('answers the preflight of a listed origin with what it may send, without credentials', async () => {
    const { server } = await start()
    // Compared as origins: case and the default port do not matter.
    for (const origin of [APP, 'https://admin.example.com', 'https://APP.example.com:443']) {
      const res = await preflight(server, origin)
      expect(res.status, origin).toBe(204)
      expect(res.headers.get('access-control-allow-origin')).toBe(origin)
      expect(res.headers.get('access-control-allow-methods')).toBe('GET, HEAD')
      expect(res.headers.get('access-control-allow-headers')).toMatch(/\bauthorization\b/)
      expect(Number(res.headers.get('access-control-max-age'))).toBeGreaterThan(0)
      expect(res.headers.get('access-control-allow-credentials')).toBeNull()
      expect(res.headers.get('vary')).toMatch(/origin/i)
    }
  })

  it('refuses the preflight of another origin with 403 ORIGIN_NOT_ALLOWED, saying where to list it', async () => {
    const { server } = await start()
    for (const origin of ['https://evil.example', 'http://app.example.com', 'null']) {
      const res = await preflight(server, origin)
      expect(res.status, origin).toBe(403)
      expect(res.headers.get('access-control-allow-origin')).toBeNull()
      const body = await res.json()
      expect(body.code).toBe('ORIGIN_NOT_ALLOWED')
      expect(body.error).toMatch(/add the origin to runEvents\.origins or SVC_REALTIME_ORIGINS/)
    }
  })

  it('answers a plain OPTIONS with Allow', async () => {
    const { server } = await start()
    const res = await fetch(`${server.url}/__tasks/runs/some-id/stream`, { method: 'OPTIONS' })
    expect(res.status).toBe(204)
    expect(res.headers.get('allow')).toBe('GET, HEAD, OPTIONS')
  })

  it('lets a listed origin read every answer, the stream and its refusals, and no other origin', async () => {
    const { server } = await start()
    const id = await trigger(server, 'jobs.doomed')
    await reached(server, id, 'failed')
    const token = await createRunToken(id, { secret: SECRET })
    const answers = [
      await stream(server, id, { origin: APP, ...bearer(token) }),
      await stream(server, id, { origin: APP }),
      await stream(server, id, { origin: APP, ...bearer(await createRunToken(id, { secret: 'wrong' })) }),
      await stream(server, 'gone', { origin: APP, ...bearer(await createRunToken('gone', { secret: SECRET })) }),
    ]
    expect(answers.map((res) => res.status)).toEqual([200, 401, 401, 404])
    for (const res of answers) {
      expect(res.headers.get('access-control-allow-origin')).toBe(APP)
      expect(res.headers.get('access-control-expose-headers')).toBe('retry-after')
      await res.body?.cancel()
    }
    const foreign = await stream(server, id, { origin: 'https://evil.example', ...bearer(token) })
    expect(foreign.headers.get('access-control-allow-origin')).toBeNull()
    expect(foreign.headers.get('vary')).toMatch(/origin/i)
    await foreign.body?.cancel()
    // The rest of the admin surface answers no page of another origin.
    const record = await fetch(`${server.url}/__tasks/runs/${id}`, { headers: { origin: APP, ...ADMIN } })
    expect(record.headers.get('access-control-allow-origin')).toBeNull()
  })

  it('takes runEvents.origins over SVC_REALTIME_ORIGINS, and * for every origin', async () => {
    const { server } = await start({ runEvents: { origins: ['*'] } })
    const res = await preflight(server, 'https://anyone.example')
    expect(res.status).toBe(204)
    expect(res.headers.get('access-control-allow-origin')).toBe('*')
  })

  it('lists none without either: only same-origin pages read the stream', async () => {
    const { server } = await start({ env: { NODE_ENV: 'production', SVC_TASK_SECRET: SECRET } })
    expect((await preflight(server, APP)).status).toBe(403)
  })

  it('names the setting when an origin in it is not one', async () => {
    await expect(start({ env: { ...PRODUCTION, SVC_REALTIME_ORIGINS: 'https://ok.example, app.example.com' } })).rejects.toThrow(
      /SVC_REALTIME_ORIGINS holds "app\.example\.com", which is not an http\(s\) origin/,
    )
    await expect(start({ runEvents: { origins: ['ftp://files.example'] } })).rejects.toThrow(
      /runEvents\.origins entries must be http\(s\) origins .* \(got "ftp:\/\/files\.example"\)/,
    )
    await expect(start({ runEvents: { origins: APP } as never })).rejects.toThrow(/runEvents\.origins must be an array of origins/)
  })
})

describe('limits and ends of a run stream', () => {
  it('counts against runEvents.maxStreams with GET /__tasks/events: the next gets 503, which the page may read', async () => {
    const { server } = await start({ runEvents: { maxStreams: 1 } })
    const id = await trigger(server, 'jobs.report')
    const open = new AbortController()
    expect((await fetch(`${server.url}/__tasks/events`, { headers: ADMIN, signal: open.signal })).status).toBe(200)
    const res = await stream(server, id, { origin: APP, ...bearer(await createRunToken(id, { secret: SECRET })) })
    expect(res.status).toBe(503)
    expect(res.headers.get('retry-after')).toBe('10')
    expect(res.headers.get('access-control-allow-origin')).toBe(APP)
    const body = await res.json()
    expect(body.code).toBe('TOO_MANY_EVENT_STREAMS')
    expect(body.error).toContain(`poll GET /__tasks/runs/${id}`)
    open.abort()
  })

  it('ends when the token it was opened with expires, without a finished status', async () => {
    const { server } = await start()
    const id = await trigger(server, 'jobs.report')
    await reached(server, id, 'suspended')
    const token = await signRunToken(id, Math.floor(Date.now() / 1000) + 1, SECRET)
    const events = eventReader((await stream(server, id, bearer(token))).body!)
    expect((await events.next())?.data.status).toBe('suspended')
    expect(await events.next()).toBeUndefined()
    const again = await stream(server, id, bearer(token))
    expect((await again.json()).code).toBe('RUN_TOKEN_EXPIRED')
  })

  it('ends when the server shuts down, which does not wait for it', async () => {
    const { server } = await start()
    const id = await trigger(server, 'jobs.report')
    await reached(server, id, 'suspended')
    const events = eventReader((await stream(server, id, ADMIN)).body!)
    expect((await events.next())?.data.status).toBe('suspended')
    await server.close()
    expect(await events.next()).toBeUndefined()
  })

  it('stops reading the run once the client goes away', async () => {
    const app = reportApp()
    const runtime = createTaskRuntime({ routes: app.routes, env: {} })
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
    const server = await serve({ apiRoutes: app.routes, env: PRODUCTION, runtime })
    try {
      const id = await trigger(server, 'jobs.report')
      await reached(server, id, 'suspended')
      const gone = new AbortController()
      const res = await fetch(`${server.url}/__tasks/runs/${id}/stream`, { headers: ADMIN, signal: gone.signal })
      await eventReader(res.body!).next()
      expect(listening).toBe(1)
      gone.abort()
      await until(() => listening === 0)
    } finally {
      await server.close()
      await runtime.close()
    }
  })

  it('answers 501 where the engine runs elsewhere, as GET /__tasks/events does', async () => {
    const app = reportApp()
    const runtime = createTaskRuntime({ routes: app.routes, env: {} })
    delete runtime.onRunChange
    const server = await serve({ apiRoutes: app.routes, env: PRODUCTION, runtime })
    try {
      const res = await stream(server, 'some-id', { origin: APP, ...ADMIN })
      expect(res.status).toBe(501)
      expect(res.headers.get('access-control-allow-origin')).toBe(APP)
      const body = await res.json()
      expect(body.code).toBe('NOT_IMPLEMENTED')
      expect(body.error).toMatch(/poll GET \/__tasks\/runs\/some-id/)
    } finally {
      await server.close()
      await runtime.close()
    }
  })
})

describe('data chunks (ctx.stream)', () => {
  const chunksOf = async (server: Server, id: string) =>
    ((await (await fetch(`${server.url}/__tasks/${id}`, { headers: ADMIN })).json()) as { chunks?: { kept: unknown[] } }).chunks?.kept ?? []

  it('sends a late subscriber the chunks the run keeps, then each new one as it is stored, each before the progress read with it', async () => {
    const { server, gates } = await start()
    const id = await trigger(server, 'jobs.write')
    await until(async () => (await chunksOf(server, id)).length === 2)
    const events = eventReader((await stream(server, id, bearer(await createRunToken(id, { secret: SECRET })))).body!)

    const [hello, comma, progress] = [await events.next(), await events.next(), await events.next()]
    expect(hello).toMatchObject({ event: 'chunk', id: '1' })
    expect(chunkOf(hello)).toEqual({ seq: 1, name: 'text', data: 'Hello', at: expect.any(String) })
    expect(comma).toMatchObject({ event: 'chunk', id: '2', data: { seq: 2, data: ', ' } })
    expect(progress?.event).toBeUndefined()
    expect(progress?.data).toMatchObject({ id, status: 'running' })
    // The progress stays free of the chunks.
    expect(JSON.stringify(progress?.data)).not.toMatch(/Hello|chunks/)

    // A chunk stored in this process is read at once, not at the stream's next refresh.
    const sent = Date.now()
    gates.world.resolve()
    const world = await events.next()
    expect(Date.now() - sent).toBeLessThan(500)
    expect(chunkOf(world)).toMatchObject({ seq: 3, name: 'text', data: 'world' })

    gates.finish.resolve()
    const last = await events.next()
    expect(last).toMatchObject({ id: 'done', data: { status: 'completed', result: 'written' } })
    expect(await events.next()).toBeUndefined()
  })

  it('starts after the chunk a client that connects again saw (Last-Event-ID), and sends every kept chunk before the end', async () => {
    const { server, gates } = await start()
    const id = await trigger(server, 'jobs.write')
    gates.world.resolve()
    gates.finish.resolve()
    await reached(server, id, 'completed')
    const token = await createRunToken(id, { secret: SECRET })
    const read = async (headers: Record<string, string>) => {
      const events = eventReader((await stream(server, id, { ...bearer(token), ...headers })).body!)
      const all: StreamEvent[] = []
      for (let event = await events.next(); event; event = await events.next()) all.push(event)
      return all.map((event) => (event.event === 'chunk' ? `chunk ${event.id}` : `${event.data.status} ${event.id}`))
    }
    expect(await read({})).toEqual(['chunk 1', 'chunk 2', 'chunk 3', 'completed done'])
    expect(await read({ 'last-event-id': '2' })).toEqual(['chunk 3', 'completed done'])
    expect(await read({ 'last-event-id': '3' })).toEqual(['completed done'])
    // An id the stream never sent starts from the first kept chunk.
    expect(await read({ 'last-event-id': 'somewhere' })).toEqual(['chunk 1', 'chunk 2', 'chunk 3', 'completed done'])
  })

  it('sends the last 100 chunks the run keeps: the seq of the first tells how many were dropped', async () => {
    const { server } = await start()
    const id = await trigger(server, 'jobs.chatty')
    await reached(server, id, 'suspended')
    const events = eventReader((await stream(server, id, bearer(await createRunToken(id, { secret: SECRET })))).body!)
    const chunks = (await readUntil(events, (event) => event.event === undefined)).slice(0, -1).map(chunkOf)
    expect(chunks.map((chunk) => chunk.seq)).toEqual(Array.from({ length: 100 }, (_, i) => i + 51))
    expect(chunks.map((chunk) => chunk.data)).toEqual(Array.from({ length: 100 }, (_, i) => i + 51))
    await events.cancel()
  })
})
