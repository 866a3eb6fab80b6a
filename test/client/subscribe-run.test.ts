/**
 * `subscribeRun` from `svcjs/client`, in Node against a real server on port
 * 0 behind a relay that can cut or refuse a stream: it hands over the run
 * as it is and then each change, and each data chunk once, connects again
 * after a drop or a 5xx, stops for good on a refusal another try would not
 * change, and stops when aborted.
 */
import { readFile } from 'node:fs/promises'
import { afterEach, describe, expect, it } from 'vitest'
import { RunStreamError, subscribeRun } from '../../src/client.ts'
import { createRunToken, type RunChunk, type RunProgress, tokenIdFor } from '../../src/index.ts'
import { serve, until } from '../http/_helpers.ts'
import { type Relay, relay, reportApp, SECRET } from './_runs.ts'

const ADMIN = { authorization: `Bearer ${SECRET}` }
const relays: Relay[] = []

afterEach(async () => {
  await Promise.all(relays.splice(0).map((r) => r.close()))
})

async function start() {
  const app = reportApp()
  const server = await serve({ apiRoutes: app.routes, env: { NODE_ENV: 'production', SVC_TASK_SECRET: SECRET } })
  const front = await relay(server.url)
  relays.push(front)
  const trigger = async (task: string) => {
    const res = await fetch(`${server.url}/__tasks/${task}`, { method: 'POST', headers: ADMIN })
    return ((await res.json()) as { id: string }).id
  }
  const status = async (id: string) =>
    ((await (await fetch(`${server.url}/__tasks/${id}`, { headers: ADMIN })).json()) as RunProgress).status
  const chunks = async (id: string) =>
    ((await (await fetch(`${server.url}/__tasks/${id}`, { headers: ADMIN })).json()) as { chunks?: { kept: RunChunk[] } }).chunks?.kept ??
    []
  const approve = async (id: string) => {
    const res = await fetch(`${server.url}/__tasks/tokens/${encodeURIComponent(tokenIdFor(id, 'approve'))}`, {
      method: 'POST',
      headers: ADMIN,
    })
    expect(res.status).toBe(200)
  }
  return {
    server,
    front,
    gates: app.gates,
    trigger,
    status,
    chunks,
    approve,
    streamOf: (id: string) => `${front.url}/__tasks/runs/${id}/stream`,
  }
}

/** Every update and error a subscription hands over. */
function recorder() {
  const updates: RunProgress[] = []
  const errors: RunStreamError[] = []
  return {
    updates,
    errors,
    onUpdate: (run: RunProgress) => void updates.push(run),
    onError: (error: RunStreamError) => void errors.push(error),
  }
}

describe('subscribeRun', () => {
  it('hands over the run as it is, then each change, and resolves closed to its finished progress', async () => {
    const { trigger, status, approve, gates, streamOf } = await start()
    const id = await trigger('jobs.report')
    await until(async () => (await status(id)) === 'suspended')
    const seen = recorder()
    const subscription = subscribeRun(streamOf(id), { token: await createRunToken(id, { secret: SECRET }), ...seen })
    await until(() => seen.updates.length > 0)
    expect(seen.updates[0]).toMatchObject({ id, status: 'suspended', steps: { fetch: { status: 'completed' } } })
    await approve(id)
    // The run holds in its last step until the page has seen it running.
    await until(() => seen.updates.some((run) => run.status === 'running'))
    gates.render.resolve()
    const last = await subscription.closed
    expect(last).toMatchObject({ status: 'completed', result: { pages: 3 } })
    expect(seen.updates.at(-1)).toBe(last)
    expect(seen.updates.map((run) => run.status)).toEqual(expect.arrayContaining(['suspended', 'running', 'completed']))
    expect(seen.errors).toEqual([])
  })

  it('connects again after the connection drops, and goes on from the run as it is then', async () => {
    const { front, trigger, status, approve, gates, streamOf } = await start()
    const id = await trigger('jobs.report')
    await until(async () => (await status(id)) === 'suspended')
    front.dropNext()
    const seen = recorder()
    const subscription = subscribeRun(streamOf(id), { token: await createRunToken(id, { secret: SECRET }), retryDelayMs: 50, ...seen })
    // The first connection is cut after its first event; the second starts again from the run's state.
    await until(() => front.streams === 2 && seen.updates.length >= 2)
    expect(seen.updates.slice(0, 2).map((run) => run.status)).toEqual(['suspended', 'suspended'])
    await approve(id)
    gates.render.resolve()
    expect((await subscription.closed)?.status).toBe('completed')
    expect(front.streams).toBe(2)
    expect(seen.errors).toEqual([])
  })

  it('hands each data chunk to onChunk once, in order, through a dropped connection, asking the server to start after the last', async () => {
    const { front, trigger, chunks, gates, streamOf } = await start()
    const id = await trigger('jobs.write')
    await until(async () => (await chunks(id)).length === 2)
    front.dropNext()
    const seen = recorder()
    const received: RunChunk[] = []
    const subscription = subscribeRun(streamOf(id), {
      token: await createRunToken(id, { secret: SECRET }),
      retryDelayMs: 50,
      onChunk: (chunk) => void received.push(chunk),
      ...seen,
    })
    // The first connection brought both chunks and the progress, then was cut.
    await until(() => front.streams === 2 && seen.updates.length >= 2)
    expect(front.lastEventIds).toEqual([null, '2'])
    gates.world.resolve()
    await until(() => received.length === 3)
    gates.finish.resolve()
    expect(await subscription.closed).toMatchObject({ status: 'completed', result: 'written' })
    expect(received.map((chunk) => `${chunk.seq} ${chunk.data}`)).toEqual(['1 Hello', '2 , ', '3 world'])
    expect(received[0]).toEqual({ seq: 1, name: 'text', data: 'Hello', at: expect.any(String) })
    expect(seen.errors).toEqual([])
  })

  it('asks a token function before each connection, so a fresh token replaces an expired one', async () => {
    const { front, trigger, status, streamOf } = await start()
    const id = await trigger('jobs.report')
    await until(async () => (await status(id)) === 'suspended')
    front.dropNext()
    let asked = 0
    const seen = recorder()
    const subscription = subscribeRun(streamOf(id), {
      token: () => {
        asked++
        return createRunToken(id, { secret: SECRET })
      },
      retryDelayMs: 50,
      ...seen,
    })
    await until(() => seen.updates.length >= 2)
    expect(asked).toBe(2)
    subscription.close()
    expect((await subscription.closed)?.status).toBe('suspended')
  })

  it('tries again after a 5xx answer, no sooner than its Retry-After', async () => {
    const { front, trigger, status, streamOf } = await start()
    const id = await trigger('jobs.doomed')
    await until(async () => (await status(id)) === 'failed')
    front.refuseNext(503, { 'retry-after': '1' })
    const seen = recorder()
    const started = Date.now()
    const subscription = subscribeRun(streamOf(id), { token: await createRunToken(id, { secret: SECRET }), retryDelayMs: 10, ...seen })
    expect((await subscription.closed)?.status).toBe('failed')
    expect(Date.now() - started).toBeGreaterThanOrEqual(1000)
    expect(front.streams).toBe(2)
    expect(seen.errors).toEqual([])
  })

  it('stops on a refusal another try would not change, and reports it once with its status and code', async () => {
    const { front, trigger, streamOf } = await start()
    const id = await trigger('jobs.report')
    const cases: [string, string, number, string][] = [
      [streamOf(id), await createRunToken(id, { secret: 'not-the-secret' }), 401, 'RUN_TOKEN_INVALID'],
      [streamOf(id), await createRunToken('another', { secret: SECRET }), 401, 'RUN_TOKEN_WRONG_RUN'],
      [streamOf('missing'), await createRunToken('missing', { secret: SECRET }), 404, 'RUN_NOT_FOUND'],
    ]
    for (const [url, token, code, name] of cases) {
      const before = front.streams
      const seen = recorder()
      const subscription = subscribeRun(url, { token, retryDelayMs: 10, ...seen })
      expect(await subscription.closed).toBeUndefined()
      expect(seen.errors).toHaveLength(1)
      expect(seen.errors[0]).toBeInstanceOf(RunStreamError)
      expect(seen.errors[0]).toMatchObject({ status: code, code: name })
      expect(front.streams - before).toBe(1)
    }
  })

  it('stops with TOKEN_FAILED when the token function throws', async () => {
    const { front, streamOf } = await start()
    const seen = recorder()
    const subscription = subscribeRun(streamOf('any'), {
      token: () => {
        throw new Error('the session ended')
      },
      ...seen,
    })
    await subscription.closed
    expect(seen.errors[0]).toMatchObject({ status: 0, code: 'TOKEN_FAILED', message: expect.stringMatching(/the session ended/) })
    expect(front.streams).toBe(0)
  })

  it('stops when its signal aborts, reporting nothing', async () => {
    const { front, trigger, status, streamOf } = await start()
    const id = await trigger('jobs.report')
    await until(async () => (await status(id)) === 'suspended')
    const seen = recorder()
    const abort = new AbortController()
    const subscription = subscribeRun(streamOf(id), { token: await createRunToken(id, { secret: SECRET }), signal: abort.signal, ...seen })
    await until(() => seen.updates.length === 1)
    abort.abort()
    expect((await subscription.closed)?.status).toBe('suspended')
    expect(seen.errors).toEqual([])
    expect(front.streams).toBe(1)
  })

  it('checks its arguments, naming what is wrong', () => {
    const onUpdate = () => {}
    expect(() => subscribeRun(42 as never, { token: 't', onUpdate })).toThrow(/url must be the run's stream URL/)
    expect(() => subscribeRun('http://x/s', { token: '', onUpdate })).toThrow(/token must be a run token from createRunToken\(\)/)
    expect(() => subscribeRun('http://x/s', { token: 't' } as never)).toThrow(/onUpdate must be a function/)
    expect(() => subscribeRun('http://x/s', { token: 't', onUpdate, onChunk: 'yes' as never })).toThrow(
      new TypeError('subscribeRun(): onChunk must be a function (got string)'),
    )
    expect(() => subscribeRun('http://x/s', { token: 't', onUpdate, retryDelayMs: -1 })).toThrow(
      new RangeError('subscribeRun(): retryDelayMs must be a number of milliseconds, 0 or more (got -1)'),
    )
  })

  it('requires the options docs/realtime.md marks required, and only those', async () => {
    const doc = await readFile(new URL('../../docs/realtime.md', import.meta.url), 'utf8')
    const rows = [...doc.matchAll(/^\| `(\w+)(?:\([^)]*\))?`(?:, `\w+`)? \| (yes|no) \|/gm)].map(([, name, required]) => ({
      name,
      required,
    }))
    const required = rows.filter((row) => row.required === 'yes').map((row) => row.name)
    expect(required).toEqual(['token', 'onUpdate'])
    expect(rows.length).toBeGreaterThanOrEqual(6)
    const all = { token: 't', onUpdate: () => {} } as Record<string, unknown>
    for (const name of required) {
      const { [name]: _, ...without } = all
      expect(() => subscribeRun('http://127.0.0.1:9/s', without as never), name).toThrow(TypeError)
    }
    const abort = new AbortController()
    abort.abort()
    const subscription = subscribeRun('http://127.0.0.1:9/s', { token: 't', onUpdate: () => {}, signal: abort.signal, onError: () => {} })
    await subscription.closed
  })
})
