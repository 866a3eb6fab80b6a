/**
 * The limits of `GET /__tasks/events`: at most `runEvents.maxStreams` open
 * streams per runtime, and a client that stops reading is dropped once more
 * than `runEvents.maxQueuedBytes` wait for it, so neither many clients nor a
 * stalled one can make the server hold memory without bound.
 */
import { connect } from 'node:net'
import { describe, expect, it, onTestFinished } from 'vitest'
import { createSvcHandler, createTaskRuntime, type RuntimeApiRoute, type TaskRuntime } from '../../src/index.ts'
import { recordingLogger, serve, until } from './_helpers.ts'

// A long task name makes each run change a few hundred bytes, so queues fill after a few thousand changes.
const LONG = `jobs.${'x'.repeat(240)}`
const routes: RuntimeApiRoute[] = [
  { path: '/api/jobs/quick', module: { kind: 'task', POST: async () => 'done' } },
  { path: `/api/${LONG.replace('.', '/')}`, module: { kind: 'task', POST: async () => 'done' } },
]

/** A runtime whose live `onRunChange` subscriptions are counted. */
function countingRuntime(): { runtime: TaskRuntime; live: () => number } {
  const runtime = createTaskRuntime({ routes, env: {}, logger: recordingLogger() })
  onTestFinished(() => runtime.close())
  let live = 0
  const listen = runtime.onRunChange!
  runtime.onRunChange = (listener, onEnd) => {
    live++
    let counted = true
    const uncount = () => {
      if (counted) live--
      counted = false
    }
    const stop = listen(listener, () => {
      uncount()
      onEnd?.()
    })
    return () => {
      uncount()
      stop()
    }
  }
  return { runtime, live: () => live }
}

/** Runs `count` runs of `task` to completion, `batch` at a time. */
async function churn(runtime: TaskRuntime, task: string, count: number, batch = 200): Promise<void> {
  for (let done = 0; done < count; done += batch) {
    const runs = await Promise.all(Array.from({ length: Math.min(batch, count - done) }, () => runtime.trigger(task)))
    await Promise.all(runs.map((run) => runtime.waitForRun(run.id)))
  }
}

describe('how many run-change streams are open', () => {
  it('serves at most runEvents.maxStreams; the next gets 503 with Retry-After, and a closed stream frees its place', async () => {
    const { runtime, live } = countingRuntime()
    const server = await serve({ apiRoutes: routes, env: { NODE_ENV: 'test' }, runtime, runEvents: { maxStreams: 2 } } as never)
    const streams = [new AbortController(), new AbortController()]
    for (const stream of streams) expect((await fetch(`${server.url}/__tasks/events`, { signal: stream.signal })).status).toBe(200)
    const refused = await fetch(`${server.url}/__tasks/events`)
    expect(refused.status).toBe(503)
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0)
    const body = await refused.json()
    expect(body.code).toBe('TOO_MANY_EVENT_STREAMS')
    expect(body.error).toContain('runEvents.maxStreams')
    expect(live()).toBe(2)
    streams[0].abort()
    await until(() => live() === 1)
    const again = new AbortController()
    expect((await fetch(`${server.url}/__tasks/events`, { signal: again.signal })).status).toBe(200)
    again.abort()
    streams[1].abort()
    await until(() => live() === 0)
  })

  it('serves 64 streams by default, and refuses the 65th', async () => {
    const { runtime, live } = countingRuntime()
    const server = await serve({ apiRoutes: routes, env: { NODE_ENV: 'test' }, runtime })
    const streams = Array.from({ length: 64 }, () => new AbortController())
    // The answers are held to the end: a response nothing references may be
    // collected, and the fetch client then closes its stream early.
    const answers = await Promise.all(streams.map((s) => fetch(`${server.url}/__tasks/events`, { signal: s.signal })))
    expect(answers.every((answer) => answer.status === 200)).toBe(true)
    expect((await fetch(`${server.url}/__tasks/events`)).status).toBe(503)
    expect(live()).toBe(answers.length)
    for (const stream of streams) stream.abort()
    await until(() => live() === 0)
  })

  it('checks the option: a limit that is not a positive whole number is a RangeError naming it', async () => {
    expect(() => createSvcHandler({ routes, runEvents: { maxStreams: 0 } } as never)).toThrow(
      /runEvents\.maxStreams must be a positive whole number \(got 0\)/,
    )
    expect(() => createSvcHandler({ routes, runEvents: { maxQueuedBytes: 1.5 } } as never)).toThrow(
      /runEvents\.maxQueuedBytes must be a positive whole number of bytes \(got 1\.5\)/,
    )
    await expect(serve({ apiRoutes: routes, runEvents: 'many' } as never)).rejects.toThrow(/runEvents must be an object/)
  })
})

describe('a client that does not read', () => {
  it('is dropped once more than runEvents.maxQueuedBytes wait for it, and the runtime stops telling it of changes', async () => {
    const { runtime, live } = countingRuntime()
    const logger = recordingLogger()
    const handler = createSvcHandler({ routes, runtime, env: { NODE_ENV: 'test' }, logger, runEvents: { maxQueuedBytes: 4096 } } as never)
    const res = await handler.fetch(new Request('http://localhost/__tasks/events'), { remoteAddress: '127.0.0.1' })
    expect(res.status).toBe(200)
    expect(live()).toBe(1)
    // Nobody reads `res.body` while the runs change.
    await churn(runtime, 'jobs.quick', 300)
    expect(live()).toBe(0)
    expect(logger.text('warn')).toMatch(/not reading.*runEvents\.maxQueuedBytes \(4096\)/)
    // What was queued is at most the bound plus the change that passed it; then the stream is an error.
    const reader = res.body!.getReader()
    let queued = 0
    await expect(
      (async () => {
        for (;;) {
          const { done, value } = await reader.read()
          if (done) return
          queued += value.byteLength
        }
      })(),
    ).rejects.toThrow()
    expect(queued).toBeLessThanOrEqual(4096 + 512)
  })

  it('over a real server: a socket that never reads is cut once the bytes waiting for it pass the bound', async () => {
    const { runtime, live } = countingRuntime()
    const server = await serve({ apiRoutes: routes, env: { NODE_ENV: 'test' }, runtime, runEvents: { maxQueuedBytes: 64 * 1024 } } as never)
    const socket = connect(server.port, '127.0.0.1')
    socket.on('error', () => {})
    const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()))
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()))
    socket.write(`GET /__tasks/events HTTP/1.1\r\nhost: localhost:${server.port}\r\n\r\n`)
    // Reads the head, then nothing more: what the server sends piles up.
    await new Promise<void>((resolve) => socket.once('data', () => resolve()))
    socket.pause()
    expect(live()).toBe(1)
    for (let round = 0; round < 40 && live() > 0; round++) await churn(runtime, LONG, 500)
    expect(live()).toBe(0)
    await closed
    expect(server.logger.text('warn')).toMatch(/not reading/)
  }, 60_000)
})
