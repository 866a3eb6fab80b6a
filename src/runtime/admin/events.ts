/**
 * `GET /__tasks/events`: the runtime's run changes as Server-Sent Events
 * (WHATWG HTML, "Server-sent events"). Each change is one `data:` line of
 * JSON, `{ id, taskName, status }`; a comment line every
 * `SSE_HEARTBEAT_MS` keeps proxies from closing an idle stream. The stream
 * ends when the client goes away, and when the runtime drains or closes,
 * so an open stream never holds a server's graceful shutdown.
 *
 * Two bounds keep the streams from holding memory without end (`runEvents`):
 * at most `maxStreams` are open on one runtime, and the next request gets 503
 * `TOO_MANY_EVENT_STREAMS` with `Retry-After`; and a stream whose client
 * does not read, so that more than `maxQueuedBytes` of events wait in its
 * queue (past what the host's socket buffers took), is dropped and stops
 * listening. The queue is the stream's own, measured in bytes by its queuing
 * strategy (WHATWG Streams, `desiredSize`).
 */
import type { Logger, RunChange, TaskRuntime } from '../types.ts'
import { jsonError } from '../http/errors.ts'
import type { ResponseClass } from '../http/types.ts'
import { describe } from '../describe.ts'

/** How often an idle event stream sends a comment. */
export const SSE_HEARTBEAT_MS = 15_000
export const DEFAULT_MAX_EVENT_STREAMS = 64
export const DEFAULT_MAX_QUEUED_EVENT_BYTES = 256 * 1024
/** `Retry-After` of the 503 past `maxStreams`: a tab that closes frees its place at once. */
export const EVENT_STREAMS_RETRY_AFTER_SECONDS = 10

/** Limits of `GET /__tasks/events`, the run-change stream. */
export interface RunEventsOptions {
  /**
   * Most run-change streams open at once on one task runtime (so in one
   * process, where the server owns the runtime). One more gets 503
   * `TOO_MANY_EVENT_STREAMS` with `Retry-After`.
   * @default 64
   */
  maxStreams?: number
  /**
   * Most bytes of events that may wait for one client that is not reading.
   * Past this the stream is dropped (its connection cut) and stops listening
   * to the runtime. Note: the host's socket buffers take some bytes before
   * they count here.
   * @default 262144 (256 KiB)
   */
  maxQueuedBytes?: number
}

/** Throws a `TypeError` or `RangeError` naming the field when `value` is not a `RunEventsOptions`. */
export function checkRunEvents(value: unknown, where: string): void {
  if (value === undefined) return
  if (value === null || typeof value !== 'object') {
    throw new TypeError(`${where}: runEvents must be an object with maxStreams and maxQueuedBytes (got ${describe(value)})`)
  }
  const { maxStreams, maxQueuedBytes } = value as Record<string, unknown>
  if (maxStreams !== undefined && !(Number.isInteger(maxStreams) && (maxStreams as number) > 0)) {
    throw new RangeError(`${where}: runEvents.maxStreams must be a positive whole number (got ${describe(maxStreams)})`)
  }
  if (maxQueuedBytes !== undefined && !(Number.isInteger(maxQueuedBytes) && (maxQueuedBytes as number) > 0)) {
    throw new RangeError(`${where}: runEvents.maxQueuedBytes must be a positive whole number of bytes (got ${describe(maxQueuedBytes)})`)
  }
}

/** Streams open on each runtime: handlers rebuilt over the same runtime (a dev reload) share its count. */
const openStreams = new WeakMap<TaskRuntime, number>()

/** The stream of `runtime`'s changes (`listen` is its `onRunChange`), or 503 when `maxStreams` are open on it already. */
export function openRunEventStream(
  runtime: TaskRuntime,
  listen: NonNullable<TaskRuntime['onRunChange']>,
  R: ResponseClass,
  logger: Logger,
  options: RunEventsOptions = {},
): Response {
  const maxStreams = options.maxStreams ?? DEFAULT_MAX_EVENT_STREAMS
  const open = openStreams.get(runtime) ?? 0
  if (open >= maxStreams) {
    return jsonError(
      R,
      503,
      'TOO_MANY_EVENT_STREAMS',
      `${open} run-change streams are open, the limit (runEvents.maxStreams); close one, or poll GET /__tasks/runs`,
      { 'retry-after': String(EVENT_STREAMS_RETRY_AFTER_SECONDS) },
    )
  }
  openStreams.set(runtime, open + 1)
  return runEventStream(listen, R, SSE_HEARTBEAT_MS, {
    maxQueuedBytes: options.maxQueuedBytes,
    logger,
    onClose: () => openStreams.set(runtime, (openStreams.get(runtime) ?? 1) - 1),
  })
}

export interface EventStreamOptions {
  /** @default DEFAULT_MAX_QUEUED_EVENT_BYTES */
  maxQueuedBytes?: number
  /** Told of a client dropped for not reading. @default console */
  logger?: Logger
  /** Called once when the stream ends, whatever ended it. */
  onClose?: () => void
}

const encoder = new TextEncoder()

/** `listen` is the runtime's `onRunChange`. */
export function runEventStream(
  listen: NonNullable<TaskRuntime['onRunChange']>,
  R: ResponseClass,
  heartbeatMs = SSE_HEARTBEAT_MS,
  options: EventStreamOptions = {},
): Response {
  const maxQueuedBytes = options.maxQueuedBytes ?? DEFAULT_MAX_QUEUED_EVENT_BYTES
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
      const send = (text: string) => {
        if (closed) return
        controller.enqueue(encoder.encode(text))
        // A chunk a reader waits for skips the queue: only unread bytes count.
        const room = controller.desiredSize ?? 0
        if (room >= 0) return
        const queued = maxQueuedBytes - room
        ;(options.logger ?? console).warn(
          `[svc] GET /__tasks/events: a client is not reading; ${queued} bytes are queued for it, past runEvents.maxQueuedBytes (${maxQueuedBytes}); dropping the stream`,
        )
        cleanup()
        // An error rather than a close, which would keep the queue until it is read.
        controller.error(new Error(`The client of this run-change stream left ${queued} bytes unread`))
      }
      const end = () => {
        if (cleanup()) controller.close()
      }
      // A first comment sends the headers at once, so a client knows it is subscribed.
      send(': subscribed\n\n')
      stop = listen((change: RunChange) => send(`data: ${JSON.stringify(change)}\n\n`), end)
      if (closed) {
        // The runtime had already ended its changes (end ran before stop was set).
        stop()
        return
      }
      heartbeat = setInterval(() => send(': heartbeat\n\n'), heartbeatMs)
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
    headers: { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-store', 'x-accel-buffering': 'no' },
  })
}
