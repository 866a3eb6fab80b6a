/**
 * Event streams of the admin surface, as Server-Sent Events (WHATWG HTML,
 * "Server-sent events"): `GET /__tasks/events`, every run change of the
 * runtime, each one `data:` line of JSON `{ id, taskName, status }`; and
 * the stream of one run (`run-stream.ts`), which feeds the same machinery.
 * A comment line every `SSE_HEARTBEAT_MS` keeps proxies from closing an
 * idle stream. A stream ends when the client goes away, and when the
 * runtime drains or closes, so an open stream never holds a server's
 * graceful shutdown.
 *
 * Bounds keep the streams from holding memory without end, and one holder
 * from taking them all (`runEvents`):
 * - at most `maxStreams` are open on one runtime, and the next request gets
 *   503 `TOO_MANY_EVENT_STREAMS` with `Retry-After`. Streams opened with a
 *   run token (a token is meant to be handed to a browser) share all but
 *   `reservedStreams(maxStreams)` of them: those are kept for streams
 *   opened with the task secret (`GET /__tasks/events`, the dashboard);
 * - one run token holds at most `maxStreamsPerToken` streams, and one client
 *   address (where the host reports it) at most `maxStreamsPerAddress` of
 *   the run-token streams; past either, 429 `TOO_MANY_EVENT_STREAMS` with
 *   `Retry-After`;
 * - a stream whose client does not read, so that more than `maxQueuedBytes`
 *   of events wait in its queue (past what the host's socket buffers took),
 *   is dropped and stops listening. The queue is the stream's own, measured
 *   in bytes by its queuing strategy (WHATWG Streams, `desiredSize`).
 */
import type { Logger, RunChange, TaskRuntime } from '../types.ts'
import { jsonError } from '../http/errors.ts'
import type { ResponseClass } from '../http/types.ts'
import type { RunEventsOptions } from './streams.ts'

/**
 * How often an idle event stream sends a comment: well within the shortest
 * idle timeout of the servers svc runs on (Bun's, 10 s by default), and of
 * common proxies (60 s and more).
 */
export const SSE_HEARTBEAT_MS = 5_000
export const DEFAULT_MAX_EVENT_STREAMS = 64
export const DEFAULT_MAX_STREAMS_PER_TOKEN = 4
export const DEFAULT_MAX_STREAMS_PER_ADDRESS = 16

/** Of `maxStreams`, how many run-token streams may not take: an eighth, at least one. */
export function reservedStreams(maxStreams: number): number {
  return Math.max(1, Math.floor(maxStreams / 8))
}
export const DEFAULT_MAX_QUEUED_EVENT_BYTES = 256 * 1024
/** `Retry-After` of the 503 past `maxStreams`: a tab that closes frees its place at once. */
export const EVENT_STREAMS_RETRY_AFTER_SECONDS = 10

/**
 * What feeds one stream. It starts at once: `send` writes an event of
 * `data` (one line: JSON has no raw line break), with the SSE `id` and
 * `event` type when given; `end` closes the stream, once the feed has
 * nothing more to say. It returns the way to stop it, called once whatever
 * ended the stream.
 */
export type EventFeed = (send: (data: string, id?: string, event?: string) => void, end: () => void) => () => void

/** One stream that `openEventStream` counts against `maxStreams`. */
export interface CountedStream {
  feed: EventFeed
  /** The request it answers, as the warnings name it: `GET /__tasks/events`. */
  label: string
  /** What to do instead, said by the 503 past `maxStreams`: `poll GET /__tasks/runs`. */
  instead: string
  /** Headers of every answer, the 503 included (CORS). */
  headers?: Record<string, string>
  /** Set for a stream opened with a run token rather than the task secret: its token, and the client's address where the host knows it. */
  holder?: { token: string; address?: string }
}

/** The streams open on one runtime: in all, and of each run token and client address. */
interface OpenStreams {
  all: number
  byToken: Map<string, number>
  byAddress: Map<string, number>
}

/** Streams open on each runtime: handlers rebuilt over the same runtime (a dev reload) share its counts. */
const openStreams = new WeakMap<TaskRuntime, OpenStreams>()

/**
 * The stream of `stream.feed` on `runtime`; or 503 when it would pass
 * `maxStreams` (less the reserved ones, for a run token's), or 429 when it
 * would pass its token's or its address's share.
 */
export function openEventStream(
  runtime: TaskRuntime,
  R: ResponseClass,
  logger: Logger,
  options: RunEventsOptions | undefined,
  stream: CountedStream,
): Response {
  let open = openStreams.get(runtime)
  if (!open) openStreams.set(runtime, (open = { all: 0, byToken: new Map(), byAddress: new Map() }))
  const refused = refusal(open, options, stream.holder)
  if (refused) {
    return jsonError(R, refused.status, 'TOO_MANY_EVENT_STREAMS', `${refused.why}; close one, or ${stream.instead}`, {
      ...stream.headers,
      'retry-after': String(EVENT_STREAMS_RETRY_AFTER_SECONDS),
    })
  }
  const { token, address } = stream.holder ?? {}
  const held = open
  held.all++
  if (token !== undefined) add(held.byToken, token, 1)
  if (address !== undefined) add(held.byAddress, address, 1)
  return eventStream(stream.feed, R, SSE_HEARTBEAT_MS, {
    maxQueuedBytes: options?.maxQueuedBytes,
    logger,
    label: stream.label,
    headers: stream.headers,
    onClose: () => {
      held.all--
      if (token !== undefined) add(held.byToken, token, -1)
      if (address !== undefined) add(held.byAddress, address, -1)
    },
  })
}

/** Why one more stream of `holder` (none: the task secret's) may not open, with its status; undefined when it may. */
function refusal(
  open: OpenStreams,
  options: RunEventsOptions | undefined,
  holder: CountedStream['holder'],
): { status: 429 | 503; why: string } | undefined {
  const maxStreams = options?.maxStreams ?? DEFAULT_MAX_EVENT_STREAMS
  if (!holder) {
    return open.all >= maxStreams ? { status: 503, why: `${open.all} event streams are open, the limit (runEvents.maxStreams)` } : undefined
  }
  const perToken = options?.maxStreamsPerToken ?? DEFAULT_MAX_STREAMS_PER_TOKEN
  const ofToken = open.byToken.get(holder.token) ?? 0
  if (ofToken >= perToken) {
    return { status: 429, why: `this run token has ${ofToken} event streams open, the limit (runEvents.maxStreamsPerToken)` }
  }
  const perAddress = options?.maxStreamsPerAddress ?? DEFAULT_MAX_STREAMS_PER_ADDRESS
  const ofAddress = holder.address === undefined ? 0 : (open.byAddress.get(holder.address) ?? 0)
  if (ofAddress >= perAddress) {
    return { status: 429, why: `${ofAddress} run streams are open from this address, the limit (runEvents.maxStreamsPerAddress)` }
  }
  const reserved = reservedStreams(maxStreams)
  if (open.all >= maxStreams - reserved) {
    return {
      status: 503,
      why: `${open.all} event streams are open, as many as run tokens may open (runEvents.maxStreams, less ${reserved} kept for the task secret)`,
    }
  }
  return undefined
}

/** Adds `by` to `key`'s count, forgetting a key whose count reaches 0. */
function add(counts: Map<string, number>, key: string, by: number): void {
  const count = (counts.get(key) ?? 0) + by
  if (count > 0) counts.set(key, count)
  else counts.delete(key)
}

/** `GET /__tasks/events`: the stream of `runtime`'s changes (`listen` is its `onRunChange`), or 503 past `maxStreams`. */
export function openRunEventStream(
  runtime: TaskRuntime,
  listen: NonNullable<TaskRuntime['onRunChange']>,
  R: ResponseClass,
  logger: Logger,
  options: RunEventsOptions = {},
): Response {
  return openEventStream(runtime, R, logger, options, {
    feed: changeFeed(listen),
    label: 'GET /__tasks/events',
    instead: 'poll GET /__tasks/runs',
  })
}

export interface EventStreamOptions {
  /** @default DEFAULT_MAX_QUEUED_EVENT_BYTES */
  maxQueuedBytes?: number
  /** Told of a client dropped for not reading. @default console */
  logger?: Logger
  /** Called once when the stream ends, whatever ended it. */
  onClose?: () => void
  /** The request the stream answers, as the warnings name it. @default 'GET /__tasks/events' */
  label?: string
  /** Headers added to the response's own. */
  headers?: Record<string, string>
}

/** Every change `listen` reports, as `{ id, taskName, status }`. */
export function changeFeed(listen: NonNullable<TaskRuntime['onRunChange']>): EventFeed {
  return (send, end) => listen((change: RunChange) => send(JSON.stringify(change)), end)
}

/** A `text/event-stream` response of what `feed` sends, with heartbeats and the bound on unread bytes. */
export function eventStream(feed: EventFeed, R: ResponseClass, heartbeatMs = SSE_HEARTBEAT_MS, options: EventStreamOptions = {}): Response {
  const maxQueuedBytes = options.maxQueuedBytes ?? DEFAULT_MAX_QUEUED_EVENT_BYTES
  const encoder = new TextEncoder()
  let closed = false
  let stop: (() => void) | undefined
  let heartbeat: ReturnType<typeof setInterval> | undefined
  /** Ends the subscription once; `false` when it had ended already. */
  const cleanup = (): boolean => {
    if (closed) return false
    closed = true
    clearInterval(heartbeat)
    stop?.()
    options.onClose?.()
    return true
  }
  const source: UnderlyingDefaultSource<Uint8Array> = {
    start(controller) {
      const write = (text: string) => {
        if (closed) return
        const before = controller.desiredSize ?? 0
        controller.enqueue(encoder.encode(text))
        // A chunk a reader waits for skips the queue: only unread bytes count.
        const room = controller.desiredSize ?? 0
        // An event alone in the queue passes whatever its size: the client
        // has read everything before it, and the run it describes may be large.
        if (room >= 0 || before >= maxQueuedBytes) return
        const queued = maxQueuedBytes - room
        ;(options.logger ?? console).warn(
          `[svc] ${options.label ?? 'GET /__tasks/events'}: a client is not reading; ${queued} bytes are queued for it, past runEvents.maxQueuedBytes (${maxQueuedBytes}); dropping the stream`,
        )
        cleanup()
        // An error rather than a close, which would keep the queue until it is read.
        controller.error(new Error(`The client of this event stream left ${queued} bytes unread`))
      }
      const end = () => {
        if (cleanup()) controller.close()
      }
      // A first comment sends the headers at once, so a client knows it is subscribed.
      write(': subscribed\n\n')
      stop = feed(
        (data, id, event) =>
          write(`${event === undefined ? '' : `event: ${event}\n`}${id === undefined ? '' : `id: ${id}\n`}data: ${data}\n\n`),
        end,
      )
      if (closed) {
        // The feed had already ended (end ran before stop was set).
        stop()
        return
      }
      heartbeat = setInterval(() => write(': heartbeat\n\n'), heartbeatMs)
      // `unref` exists in Node and Deno, not in workers: a stream alone must not keep a process alive.
      ;(heartbeat as { unref?: () => void }).unref?.()
    },
    cancel() {
      cleanup()
    },
  }
  const body = new ReadableStream<Uint8Array>(source, { highWaterMark: maxQueuedBytes, size: (chunk) => chunk.byteLength })
  return new R(body, {
    status: 200,
    headers: {
      ...options.headers,
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store',
      'x-accel-buffering': 'no',
    },
  })
}
