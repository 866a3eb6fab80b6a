/** What the run-stream suites share: an app whose tasks have steps and wait where a test says, a reader of event streams, and a relay that drops them. */
import { createServer, request } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { RunChunk, RunProgress, RuntimeApiRoute, TaskContext } from '../../src/index.ts'
import { deferred } from '../http/_helpers.ts'

/** A task secret of the length a production server requires (32 bytes at least). */
export const SECRET = 'realtime-secret-0123456789abcdef0123456789'

/**
 * `jobs.report`: a step, a wait for the token `approve`, then a step held
 * until `gates.render` is let go. `jobs.doomed` records a step and fails.
 * `jobs.progress` records its steps one by one, each after a gate, without
 * changing status in between. `jobs.write` sends the chunks 'Hello' and
 * ', ', then 'world' after `gates.world`, and ends after `gates.finish`.
 * `jobs.chatty` sends 150 chunks without waiting, then waits for the token
 * `quiet`. `jobs.chat` waits for a `message` signal, streams its data back
 * as a chunk, and returns it.
 */
export function reportApp() {
  const gates = { render: deferred(), second: deferred(), third: deferred(), world: deferred(), finish: deferred() }
  const routes: RuntimeApiRoute[] = [
    {
      path: '/api/jobs/report',
      module: {
        kind: 'task',
        POST: async (ctx: TaskContext) => {
          const rows = await ctx.step.run('fetch', () => 3)
          await ctx.step.waitForToken('approve')
          await ctx.step.run('render', async () => {
            await gates.render.promise
            return 'pdf'
          })
          return { pages: rows }
        },
      },
    },
    {
      path: '/api/jobs/doomed',
      module: {
        kind: 'task',
        POST: async (ctx: TaskContext) => {
          await ctx.step.run('try', () => 1)
          throw new Error('out of paper')
        },
      },
    },
    {
      path: '/api/jobs/progress',
      module: {
        kind: 'task',
        POST: async (ctx: TaskContext) => {
          await ctx.step.run('first', () => 1)
          await gates.second.promise
          await ctx.step.run('second', () => 2)
          await gates.third.promise
          await ctx.step.run('third', () => 3)
          return 'done'
        },
      },
    },
    {
      path: '/api/jobs/write',
      module: {
        kind: 'task',
        POST: async (ctx: TaskContext) => {
          await ctx.stream('text', 'Hello')
          await ctx.stream('text', ', ')
          await gates.world.promise
          await ctx.stream('text', 'world')
          await gates.finish.promise
          return 'written'
        },
      },
    },
    {
      path: '/api/jobs/chatty',
      module: {
        kind: 'task',
        POST: async (ctx: TaskContext) => {
          for (let n = 1; n <= 150; n++) void ctx.stream('n', n)
          await ctx.step.waitForToken('quiet')
        },
      },
    },
    {
      path: '/api/jobs/chat',
      module: {
        kind: 'task',
        POST: async (ctx: TaskContext) => {
          const message = await ctx.step.waitForSignal('message', 'message')
          const data = 'timedOut' in message ? null : message.data
          await ctx.stream('reply', data)
          return data
        },
      },
    },
  ]
  return { routes, gates }
}

export interface StreamEvent {
  id?: string
  /** The event's type, when it names one (`chunk`). */
  event?: string
  /** A `RunProgress`; a `RunChunk` for an `event: chunk` (`chunkOf`). */
  data: RunProgress
}

/** The chunk an `event: chunk` carries. */
export function chunkOf(event: StreamEvent | undefined): RunChunk {
  if (event?.event !== 'chunk') throw new Error(`not a chunk event: ${JSON.stringify(event)}`)
  return event.data as unknown as RunChunk
}

/** Reads a `text/event-stream` body: `next()` is its next event, or `undefined` once the stream has ended. */
export function eventReader(body: ReadableStream<Uint8Array>): { next(): Promise<StreamEvent | undefined>; cancel(): Promise<void> } {
  const reader = body.getReader()
  const decoder = new TextDecoder()
  let buffer = ''
  return {
    async next() {
      for (;;) {
        const end = buffer.indexOf('\n\n')
        if (end !== -1) {
          const block = buffer.slice(0, end)
          buffer = buffer.slice(end + 2)
          let id: string | undefined
          let type: string | undefined
          let data: string | undefined
          for (const line of block.split('\n')) {
            if (line.startsWith('id: ')) id = line.slice(4)
            if (line.startsWith('event: ')) type = line.slice(7)
            if (line.startsWith('data: ')) data = line.slice(6)
          }
          // Comments (subscribed, heartbeats) carry no data.
          if (data === undefined) continue
          const event: StreamEvent = { data: JSON.parse(data) }
          if (id !== undefined) event.id = id
          if (type !== undefined) event.event = type
          return event
        }
        const { value, done } = await reader.read()
        if (done) return undefined
        buffer += decoder.decode(value, { stream: true })
      }
    },
    cancel: () => reader.cancel(),
  }
}

export interface Relay {
  /** Its base URL: another origin than the server it relays to. */
  url: string
  /** How many requests for a run stream came. */
  streams: number
  /** The method and path of every request, in order. */
  requests: string[]
  /** The `Last-Event-ID` of every stream request, in order (`null` without one). */
  lastEventIds: (string | null)[]
  /** Cuts the next stream's connection a moment after its first event has passed. */
  dropNext(): void
  /** Cuts the connection of every stream open now. */
  dropOpen(): void
  /** Answers the next stream request itself, with this status and headers. */
  refuseNext(status: number, headers?: Record<string, string>): void
  close(): Promise<void>
}

/** Hop-by-hop headers (RFC 9110 §7.6.1), which a relay does not pass on. */
const HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'upgrade'])

/**
 * A relay on port 0 in front of `target`, as a proxy or a load balancer
 * would stand: it passes requests and answers through, and cuts or refuses
 * a stream when the test says, as a dropped connection or a server under
 * load would.
 */
export async function relay(target: string): Promise<Relay> {
  let drops = 0
  const open = new Set<() => void>()
  const refusals: { status: number; headers: Record<string, string> }[] = []
  const server = createServer((req, res) => {
    state.requests.push(`${req.method} ${req.url?.replace(/\?.*/, '')}`)
    const isStream = req.method === 'GET' && /\/stream\/?(\?|$)/.test(req.url ?? '')
    if (isStream) {
      state.streams++
      state.lastEventIds.push((req.headers['last-event-id'] as string | undefined) ?? null)
    }
    const refusal = isStream ? refusals.shift() : undefined
    if (refusal) {
      res.writeHead(refusal.status, { 'content-type': 'application/json', ...refusal.headers })
      res.end(JSON.stringify({ code: 'RELAY_REFUSED', error: 'refused by the test relay' }))
      return
    }
    const drop = isStream && drops > 0 && drops-- > 0
    const cut = () => {
      req.socket.destroy()
      upstream.destroy()
    }
    if (isStream) {
      open.add(cut)
      res.on('close', () => open.delete(cut))
    }
    const upstream = request(
      new URL(req.url!, target),
      { method: req.method, headers: { ...req.headers, host: new URL(target).host } },
      (answer) => {
        const headers = Object.fromEntries(Object.entries(answer.headers).filter(([name]) => !HOP.has(name)))
        res.writeHead(answer.statusCode ?? 502, headers)
        answer.on('data', (chunk: Buffer) => {
          res.write(chunk)
          // A moment after the first event, so that the client has surely read it.
          if (drop && chunk.includes('data:')) setTimeout(cut, 200)
        })
        answer.on('end', () => res.end())
      },
    )
    upstream.on('error', () => res.destroy())
    res.on('close', () => upstream.destroy())
    req.pipe(upstream)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const state: Relay = {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    streams: 0,
    requests: [],
    lastEventIds: [],
    dropNext: () => void drops++,
    dropOpen: () => {
      for (const cut of [...open]) cut()
    },
    refuseNext: (status, headers = {}) => void refusals.push({ status, headers }),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
  return state
}
