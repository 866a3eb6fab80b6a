/**
 * Signals sent with a run token over a real server on port 0
 * (`POST /__tasks/runs/<id>/signals/<name>`): a token whose claim allows
 * the signal sends it, any other token is refused with the code the
 * stream uses or 403 `RUN_TOKEN_NOT_ALLOWED`, the rest of the admin
 * surface stays the secret's, and pages of the listed origins may send
 * (CORS) while a form post of any site reaches nothing. Every refusal
 * keeps nothing.
 */
import { describe, expect, it } from 'vitest'
import { createRunToken, MemoryRunStore, type RuntimeApiRoute, type TaskContext } from '../../src/index.ts'
import { signRunToken } from '../../src/runtime/admin/run-token.ts'
import { tokenSecret } from '../../src/runtime/signing-secret.ts'
import { serve, type TestServerOptions, until } from './_helpers.ts'

const SECRET = 'signal-token-secret-0123456789abcdef0123'
const ADMIN = { authorization: `Bearer ${SECRET}` }
const APP = 'https://app.example.com'
const PRODUCTION = { NODE_ENV: 'production', SVC_TASK_SECRET: SECRET, SVC_REALTIME_ORIGINS: APP }

/** `chat`: takes two `message` signals, then returns them. */
const ROUTES: RuntimeApiRoute[] = [
  {
    path: '/api/chat',
    module: {
      kind: 'task',
      POST: async (ctx: TaskContext) => {
        const first = await ctx.step.waitForSignal('first', 'message')
        const second = await ctx.step.waitForSignal('second', 'message')
        return [first, second].map((signal) => ('timedOut' in signal ? null : signal.data))
      },
    },
  },
]

type Server = Awaited<ReturnType<typeof serve>>

const start = (options: TestServerOptions = {}) => serve({ apiRoutes: ROUTES, env: PRODUCTION, store: new MemoryRunStore(), ...options })

async function started(server: Server, headers: Record<string, string> = ADMIN): Promise<string> {
  const res = await fetch(`${server.url}/__tasks/chat`, { method: 'POST', headers })
  expect(res.status).toBe(202)
  const { id } = (await res.json()) as { id: string }
  await until(async () => (await record(server, id, headers)).status === 'suspended')
  return id
}

const record = async (server: Server, id: string, headers: Record<string, string> = ADMIN) =>
  (await (await fetch(`${server.url}/__tasks/runs/${id}`, { headers })).json()) as Record<string, any>

const kept = async (server: Server, id: string, headers: Record<string, string> = ADMIN) =>
  ((await (await fetch(`${server.url}/__tasks/runs/${id}/signals`, { headers })).json()) as { signals: unknown[] }).signals.length

const bearer = (token: string) => ({ authorization: `Bearer ${token}` })

/** POSTs the signal `name` with `data` as JSON (none when `undefined`). */
function send(server: Server, id: string, name: string, data: unknown, headers: Record<string, string>, path = '') {
  return fetch(`${server.url}/__tasks/runs/${encodeURIComponent(id)}/signals/${encodeURIComponent(name)}${path}`, {
    method: 'POST',
    headers: data === undefined ? headers : { 'content-type': 'application/json', ...headers },
    body: data === undefined ? undefined : JSON.stringify(data),
  })
}

async function answer(res: Response) {
  return { status: res.status, challenge: res.headers.get('www-authenticate'), body: (await res.json()) as Record<string, any> }
}

describe('a run token that allows signals', () => {
  it('sends the signals it names to its run, and no other: 403 RUN_TOKEN_NOT_ALLOWED naming the token to make', async () => {
    const server = await start()
    const id = await started(server)
    const token = await createRunToken(id, { secret: SECRET, signals: ['message'] })
    const sent = await answer(await send(server, id, 'message', 'hello', { ...bearer(token), 'idempotency-key': 'm-1' }))
    expect(sent).toMatchObject({ status: 202, body: { id: 'm-1', runId: id, name: 'message', duplicate: false } })

    const other = await answer(await send(server, id, 'other', 1, bearer(token)))
    expect(other).toEqual({
      status: 403,
      challenge: 'Bearer realm="svc", error="insufficient_scope"',
      body: {
        code: 'RUN_TOKEN_NOT_ALLOWED',
        error: `The run token may send run "${id}" the signals 'message', not 'other': make one that may with createRunToken(runId, { signals: ['message', 'other'] }) on the app's server`,
      },
    })
    expect(await kept(server, id)).toBe(1)

    expect((await send(server, id, 'message', 'again', bearer(token))).status).toBe(202)
    const done = await until(async () => {
      const run = await record(server, id)
      return run.status === 'completed' && run
    })
    expect(done.result).toEqual(['hello', 'again'])
  })

  it('with signals: true, sends any signal to its run', async () => {
    const server = await start()
    const id = await started(server)
    const token = await createRunToken(id, { secret: SECRET, signals: true })
    expect((await send(server, id, 'note', { any: 'name' }, bearer(token))).status).toBe(202)
    expect((await send(server, id, 'message', undefined, bearer(token))).status).toBe(202)
    expect(await kept(server, id)).toBe(2)
  })

  it('also reads the run, as every run token does', async () => {
    const server = await start()
    const id = await started(server)
    const token = await createRunToken(id, { secret: SECRET, signals: ['message'] })
    const res = await fetch(`${server.url}/__tasks/runs/${id}/stream`, { headers: bearer(token) })
    expect(res.status).toBe(200)
    await res.body?.cancel()
  })
})

describe('tokens that may not send', () => {
  it('refuses a read-only token with 403 RUN_TOKEN_NOT_ALLOWED saying how to make one that may', async () => {
    const server = await start()
    const id = await started(server)
    // A token made before signals, without `sig`, is read-only too.
    for (const token of [
      await createRunToken(id, { secret: SECRET }),
      await signRunToken(id, Math.floor(Date.now() / 1000) + 60, SECRET),
    ]) {
      expect(await answer(await send(server, id, 'message', 'hi', bearer(token)))).toEqual({
        status: 403,
        challenge: 'Bearer realm="svc", error="insufficient_scope"',
        body: {
          code: 'RUN_TOKEN_NOT_ALLOWED',
          error: `The run token only reads run "${id}" and sends it no signal: make one that may with createRunToken(runId, { signals: ['message'] }) on the app's server`,
        },
      })
    }
    expect(await kept(server, id)).toBe(0)
  })

  it("refuses another run's token, an expired one and an altered one with 401 and the stream's codes, and no credentials with 401 UNAUTHORIZED", async () => {
    const server = await start()
    const id = await started(server)
    const other = await started(server)
    const valid = await createRunToken(id, { secret: SECRET, signals: true })
    const [prefix, payload, signature] = valid.split('.')
    const flip = (text: string, at: number) => text.slice(0, at) + (text[at] === 'A' ? 'B' : 'A') + text.slice(at + 1)
    const cases: [string, string, RegExp][] = [
      [await createRunToken(other, { secret: SECRET, signals: true }), 'RUN_TOKEN_WRONG_RUN', /for another run/],
      [await signRunToken(id, Math.floor(Date.now() / 1000) - 1, SECRET, true), 'RUN_TOKEN_EXPIRED', /expired at/],
      [`${prefix}.${flip(payload, 3)}.${signature}`, 'RUN_TOKEN_INVALID', /not signed with the task secret/],
      [`${prefix}.${payload}.${flip(signature, 5)}`, 'RUN_TOKEN_INVALID', /not signed with the task secret/],
      [await createRunToken(id, { secret: 'another-secret-0123456789abcdef0123', signals: true }), 'RUN_TOKEN_INVALID', /not signed/],
    ]
    for (const [token, code, message] of cases) {
      const res = await answer(await send(server, id, 'message', 'hi', bearer(token)))
      expect(res, code).toMatchObject({ status: 401, challenge: 'Bearer realm="svc", error="invalid_token"', body: { code } })
      expect(res.body.error).toMatch(message)
    }
    const none = await answer(await send(server, id, 'message', 'hi', {}))
    expect(none).toMatchObject({ status: 401, challenge: 'Bearer realm="svc"', body: { code: 'UNAUTHORIZED' } })
    expect(none.body.error).toMatch(/Authorization: Bearer <token>, or the task secret as the bearer/)
    // A write takes no token from its URL.
    const query = await answer(await send(server, id, 'message', 'hi', {}, `?token=${valid}`))
    expect(query).toMatchObject({ status: 401, body: { code: 'UNAUTHORIZED' } })
    expect(query.body.error).toMatch(/never in \?token=/)
    expect(await kept(server, id)).toBe(0)
    expect(await kept(server, other)).toBe(0)
  })

  it('opens nothing else of the admin surface: the signal list, the run, cancel and starting a task stay the secret’s', async () => {
    const server = await start()
    const id = await started(server)
    const token = bearer(await createRunToken(id, { secret: SECRET, signals: true }))
    const json = { ...token, 'content-type': 'application/json' }
    const answers = await Promise.all([
      fetch(`${server.url}/__tasks/runs/${id}/signals`, { headers: token }),
      fetch(`${server.url}/__tasks/runs/${id}`, { headers: token }),
      fetch(`${server.url}/__tasks/runs/${id}/cancel`, { method: 'POST', headers: token }),
      fetch(`${server.url}/__tasks/chat`, { method: 'POST', headers: json, body: '{}' }),
      fetch(`${server.url}/__tasks/runs/${id}/signals/`, { method: 'POST', headers: json, body: '1' }),
    ])
    for (const res of answers) {
      expect(res.status).toBe(401)
      expect((await res.json()).code).toBe('UNAUTHORIZED')
    }
    expect((await record(server, id)).status).toBe('suspended')
  })

  it('answers other methods with 405, once let in', async () => {
    const server = await start()
    const id = await started(server)
    const token = bearer(await createRunToken(id, { secret: SECRET, signals: true }))
    const res = await fetch(`${server.url}/__tasks/runs/${id}/signals/message`, { headers: token })
    expect(res.status).toBe(405)
    expect(res.headers.get('allow')).toBe('POST, OPTIONS')
    expect((await fetch(`${server.url}/__tasks/runs/${id}/signals/message`)).status).toBe(401)
  })
})

describe('pages of other origins (CORS)', () => {
  const preflight = (server: Server, origin: string) =>
    fetch(`${server.url}/__tasks/runs/some-id/signals/message`, {
      method: 'OPTIONS',
      headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, content-type' },
    })

  it('answers the preflight of a listed origin with what it may send, without credentials', async () => {
    const server = await start()
    const res = await preflight(server, APP)
    expect(res.status).toBe(204)
    expect(res.headers.get('access-control-allow-origin')).toBe(APP)
    expect(res.headers.get('access-control-allow-methods')).toBe('POST')
    expect(res.headers.get('access-control-allow-headers')).toBe('authorization, content-type, idempotency-key')
    expect(res.headers.get('access-control-allow-credentials')).toBeNull()
    expect(res.headers.get('vary')).toMatch(/origin/i)
  })

  it('refuses the preflight of another origin with 403 ORIGIN_NOT_ALLOWED, and of every origin when none is listed', async () => {
    const listed = await start()
    const unlisted = await start({ env: { NODE_ENV: 'production', SVC_TASK_SECRET: SECRET } })
    for (const [server, origin] of [
      [listed, 'https://evil.example'],
      [unlisted, APP],
    ] as const) {
      const res = await preflight(server, origin)
      expect(res.status, origin).toBe(403)
      expect(res.headers.get('access-control-allow-origin')).toBeNull()
      const body = await res.json()
      expect(body.code).toBe('ORIGIN_NOT_ALLOWED')
      expect(body.error).toBe(
        `Pages of ${origin} may not send signals to this run: add the origin to runEvents.origins or SVC_REALTIME_ORIGINS on the task server`,
      )
    }
  })

  it('answers a plain OPTIONS with Allow', async () => {
    const server = await start()
    const res = await fetch(`${server.url}/__tasks/runs/some-id/signals/message`, { method: 'OPTIONS' })
    expect(res.status).toBe(204)
    expect(res.headers.get('allow')).toBe('POST, OPTIONS')
  })

  it('lets a listed origin read the answer and its refusals, and no other origin', async () => {
    const server = await start()
    const id = await started(server)
    const token = await createRunToken(id, { secret: SECRET, signals: ['message'] })
    const answers = [
      await send(server, id, 'message', 'hi', { origin: APP, ...bearer(token) }),
      await send(server, id, 'other', 'hi', { origin: APP, ...bearer(token) }),
      await send(server, id, 'message', 'hi', { origin: APP, ...bearer(await createRunToken(id, { secret: SECRET })) }),
      await send(server, id, 'message', 'hi', { origin: APP }),
      await send(server, 'gone', 'message', 'hi', {
        origin: APP,
        ...bearer(await createRunToken('gone', { secret: SECRET, signals: true })),
      }),
    ]
    expect(answers.map((res) => res.status)).toEqual([202, 403, 403, 401, 404])
    for (const res of answers) {
      expect(res.headers.get('access-control-allow-origin')).toBe(APP)
      expect(res.headers.get('access-control-allow-credentials')).toBeNull()
      await res.body?.cancel()
    }
    const foreign = await send(server, id, 'message', 'hi', { origin: 'https://evil.example', ...bearer(token) })
    expect(foreign.headers.get('access-control-allow-origin')).toBeNull()
    expect(foreign.headers.get('vary')).toMatch(/origin/i)
    await foreign.body?.cancel()
    // The list of signals answers no page of another origin.
    const listed = await fetch(`${server.url}/__tasks/runs/${id}/signals`, { headers: { origin: APP, ...ADMIN } })
    expect(listed.headers.get('access-control-allow-origin')).toBeNull()
  })

  it('refuses a body that is not JSON, as a form or a no-cors fetch sends it, with 415, keeping nothing', async () => {
    const server = await start()
    const id = await started(server)
    const token = await createRunToken(id, { secret: SECRET, signals: true })
    for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x']) {
      const res = await fetch(`${server.url}/__tasks/runs/${id}/signals/message`, {
        method: 'POST',
        headers: { origin: APP, 'content-type': type, ...bearer(token) },
        body: '"hi"',
      })
      expect(res.status, type).toBe(415)
      expect(res.headers.get('access-control-allow-origin')).toBe(APP)
      expect((await res.json()).code).toBe('UNSUPPORTED_MEDIA_TYPE')
    }
    expect(await kept(server, id)).toBe(0)
  })
})

describe('in development without a secret', () => {
  const DEV = { NODE_ENV: 'development', SVC_REALTIME_ORIGINS: APP }

  it('takes the tokens this process signs, and lets no page of another site send without one', async () => {
    const server = await start({ env: DEV })
    const id = await started(server, {})
    const token = await createRunToken(id, { secret: tokenSecret(DEV), signals: ['message'] })
    expect((await send(server, id, 'message', 'hi', { origin: APP, ...bearer(token) })).status).toBe(202)
    // The developer's own requests pass, as on the rest of the surface.
    expect((await send(server, id, 'note', 1, {})).status).toBe(202)
    // A page of another site, listed or not, without a token: refused as the admin surface refuses it.
    for (const origin of [APP, 'https://evil.example']) {
      const res = await send(server, id, 'message', 'hi', { origin, 'sec-fetch-site': 'cross-site' })
      expect(res.status, origin).toBe(403)
      expect((await res.json()).code).toBe('FORBIDDEN')
    }
    // A form post of another site carries no token and is refused, whatever its type.
    const form = await fetch(`${server.url}/__tasks/runs/${id}/signals/message`, {
      method: 'POST',
      headers: { origin: 'https://evil.example', 'sec-fetch-site': 'cross-site', 'content-type': 'text/plain' },
      body: 'hi',
    })
    expect(form.status).toBe(403)
    expect(await kept(server, id, {})).toBe(2)
  })
})
