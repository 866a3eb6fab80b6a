/**
 * `subscribeRun()`: a page follows one run's progress from the task server
 * (`GET /__tasks/runs/<id>/stream`, docs/realtime.md). Browser code with
 * no dependency: `fetch` with a streamed body, so the run token travels in
 * `Authorization`, never in a URL a log keeps.
 *
 * A dropped connection is opened again after a backoff that doubles from
 * `retryDelayMs` to `maxRetryDelayMs`, with jitter, so that the pages of a
 * restarted server do not all come back at once; each new connection
 * starts with the run as it is then, so nothing is missed. It stops once
 * the run has finished, when aborted, and on an answer that another try
 * would not change (a bad or expired token, an unknown run).
 *
 * The run's data chunks (`ctx.stream`) come as `event: chunk` with their
 * `seq` as the event id. A new connection sends the last seq handed over
 * as `Last-Event-ID`, so the server starts after it, and a chunk whose seq
 * is not above it is not handed over again.
 */
import type { RunChunk, RunProgress } from '../runtime/types/runs.ts'
import { EventStreamReader } from './event-stream.ts'

export interface SubscribeRunOptions {
  /**
   * A run token from `createRunToken(runId)` on the app's server, or a
   * function that returns one. Note: a function is called before each
   * connection, so a token that expired while the run went on is replaced
   * by a fresh one.
   */
  token: string | (() => string | Promise<string>)
  /** Called with the run's progress: first as it is now, then after each change, the last time with a finished status. */
  onUpdate: (run: RunProgress) => void
  /**
   * Called with each data chunk the run sends (`ctx.stream`), in order of
   * `seq`, once each: first those the run keeps (its last 100), then each
   * new one, before the progress read with them. Note: a `seq` that skips
   * numbers means chunks were dropped before they could be handed over.
   */
  onChunk?: (chunk: RunChunk) => void
  /**
   * Called once when the subscription stops on an error: an answer another
   * try would not change (401 with a `RUN_TOKEN_*` code, 404
   * `RUN_NOT_FOUND`, 501 where the server cannot stream runs), or a
   * `token` function that threw. Dropped connections and 5xx answers are
   * retried, not reported.
   * @default console.error
   */
  onError?: (error: RunStreamError) => void
  /** Aborting it stops the subscription, as `close()` does. */
  signal?: AbortSignal
  /**
   * Milliseconds before the first new try after a dropped connection; each
   * try in a row without an event doubles it.
   * @default 500
   */
  retryDelayMs?: number
  /** @default 10000 */
  maxRetryDelayMs?: number
}

export interface RunSubscription {
  /** Stops the subscription: the open connection is closed and no other is made. */
  close(): void
  /**
   * Resolves once the subscription has stopped, whatever stopped it, to
   * the last progress it handed to `onUpdate` (`undefined` when none
   * came). Never rejects: errors go to `onError`.
   */
  readonly closed: Promise<RunProgress | undefined>
}

/** Why a subscription stopped: the HTTP status (0 when no answer was read) and the server's `code`. */
export class RunStreamError extends Error {
  readonly status: number
  readonly code: string

  constructor(status: number, code: string, message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.name = 'RunStreamError'
    this.status = status
    this.code = code
  }
}

const FINISHED = new Set(['completed', 'failed', 'cancelled', 'compensation_failed'])

/**
 * Follows one run: `url` is its stream on the task server,
 * `https://tasks.example.com/__tasks/runs/<id>/stream`. Throws a
 * `TypeError` for a bad argument.
 */
export function subscribeRun(url: string | URL, options: SubscribeRunOptions): RunSubscription {
  const where = 'subscribeRun()'
  if (typeof url !== 'string' && !(url instanceof URL)) {
    throw new TypeError(
      `${where}: url must be the run's stream URL, such as https://tasks.example.com/__tasks/runs/<id>/stream (got ${typeof url})`,
    )
  }
  if (options === null || typeof options !== 'object') throw new TypeError(`${where}: options must be an object with token and onUpdate`)
  const { token, onUpdate, signal } = options
  if (typeof token !== 'function' && (typeof token !== 'string' || token === '')) {
    throw new TypeError(`${where}: token must be a run token from createRunToken(), or a function that returns one (got ${typeof token})`)
  }
  if (typeof onUpdate !== 'function') throw new TypeError(`${where}: onUpdate must be a function (got ${typeof onUpdate})`)
  if (options.onChunk !== undefined && typeof options.onChunk !== 'function') {
    throw new TypeError(`${where}: onChunk must be a function (got ${typeof options.onChunk})`)
  }
  if (options.onError !== undefined && typeof options.onError !== 'function') {
    throw new TypeError(`${where}: onError must be a function (got ${typeof options.onError})`)
  }
  if (signal !== undefined && !(signal instanceof AbortSignal)) throw new TypeError(`${where}: signal must be an AbortSignal`)
  const first = delayOption(options.retryDelayMs, 500, 'retryDelayMs')
  const most = Math.max(first, delayOption(options.maxRetryDelayMs, 10_000, 'maxRetryDelayMs'))
  const onError = options.onError ?? ((error: RunStreamError) => console.error(error))
  const onChunk = options.onChunk

  const stopper = new AbortController()
  const stop = () => stopper.abort()
  if (signal?.aborted) stop()
  signal?.addEventListener('abort', stop, { once: true })
  const stopped = stopper.signal
  let last: RunProgress | undefined
  /** The seq of the last chunk handed over. */
  let lastSeq = 0
  /** Whether the current connection has brought an event: a connection that did resets the backoff, however it ended. */
  let heard = false

  /**
   * One connection, to its end: `finished` once the run has,
   * `retryAfterMs` when the server said when to try again. Throws
   * `RunStreamError` when another try would not help.
   */
  async function connect(): Promise<{ finished: boolean; retryAfterMs?: number }> {
    const bearer = await tokenOf(token)
    const headers: Record<string, string> = { accept: 'text/event-stream', authorization: `Bearer ${bearer}` }
    if (lastSeq > 0) headers['last-event-id'] = String(lastSeq)
    const response = await fetch(url, {
      headers,
      cache: 'no-store',
      signal: stopped,
    })
    // What the server answers an EventSource that saw the end: nothing more will come.
    if (response.status === 204) return { finished: true }
    if (!response.ok) {
      if (!passing(response.status)) throw await answerError(response)
      response.body?.cancel().catch(() => {})
      return { finished: false, retryAfterMs: retryAfter(response) }
    }
    if (!response.body || !(response.headers.get('content-type') ?? '').startsWith('text/event-stream')) {
      throw new RunStreamError(response.status, 'BAD_RESPONSE', `${String(url)} answered ${response.status} without an event stream`)
    }
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader()
    const events = new EventStreamReader()
    try {
      for (;;) {
        const { value, done } = await reader.read()
        if (done) return { finished: false }
        for (const event of events.push(value)) {
          if (event.event === 'chunk') {
            const chunk = parseChunk(event.data)
            heard = true
            if (chunk.seq <= lastSeq) continue
            lastSeq = chunk.seq
            if (onChunk) deliver(onChunk, chunk)
            continue
          }
          // A type this client does not know is for a later one.
          if (event.event !== 'message') continue
          const run = parseProgress(event.data)
          last = run
          heard = true
          deliver(onUpdate, run)
          if (FINISHED.has(run.status)) return { finished: true }
        }
      }
    } finally {
      reader.cancel().catch(() => {})
    }
  }

  const closed = (async (): Promise<RunProgress | undefined> => {
    let failures = 0
    while (!stopped.aborted) {
      let retryAfterMs: number | undefined
      heard = false
      try {
        const outcome = await connect()
        if (outcome.finished) break
        retryAfterMs = outcome.retryAfterMs
      } catch (error) {
        if (stopped.aborted) break
        if (error instanceof RunStreamError) {
          deliver(onError, error)
          break
        }
        // A network failure, or a connection cut: try again.
      }
      failures = heard ? 1 : failures + 1
      const backoff = Math.min(most, first * 2 ** (failures - 1))
      await sleep(Math.max(backoff / 2 + (Math.random() * backoff) / 2, retryAfterMs ?? 0), stopped)
    }
    signal?.removeEventListener('abort', stop)
    return last
  })()

  return { close: stop, closed }
}

/** Whether another try may be answered otherwise: a timeout, too many requests, a server error (501 aside: the server cannot stream runs). */
function passing(status: number): boolean {
  return status === 408 || status === 429 || (status >= 500 && status !== 501)
}

async function tokenOf(token: SubscribeRunOptions['token']): Promise<string> {
  if (typeof token === 'string') return token
  let value: unknown
  try {
    value = await token()
  } catch (cause) {
    throw new RunStreamError(0, 'TOKEN_FAILED', `subscribeRun(): the token function threw: ${(cause as Error)?.message ?? cause}`, {
      cause,
    })
  }
  if (typeof value !== 'string' || value === '') {
    throw new RunStreamError(0, 'TOKEN_FAILED', `subscribeRun(): the token function must return a run token (got ${typeof value})`)
  }
  return value
}

function parseProgress(data: string): RunProgress {
  return parseEvent(data, (run) => typeof (run as RunProgress).status === 'string', "an event that is not a run's progress")
}

function parseChunk(data: string): RunChunk {
  const isChunk = (chunk: object) => Number.isSafeInteger((chunk as RunChunk).seq) && typeof (chunk as RunChunk).name === 'string'
  return parseEvent(data, isChunk, "a chunk event that is not a run's chunk")
}

/** The JSON object of an event's `data` when `fits` it, else a `RunStreamError` saying the stream sent `what`. */
function parseEvent<T>(data: string, fits: (value: object) => boolean, what: string): T {
  let value: unknown
  try {
    value = JSON.parse(data)
  } catch {
    value = undefined
  }
  if (value === null || typeof value !== 'object' || !fits(value)) {
    throw new RunStreamError(200, 'BAD_EVENT', `The run stream sent ${what}: ${data.slice(0, 200)}`)
  }
  return value as T
}

/** Calls a callback of the page; what it throws is reported as an uncaught error, as an event listener's is, and the subscription goes on. */
function deliver<T>(callback: (value: T) => void, value: T): void {
  try {
    callback(value)
  } catch (error) {
    const report = (globalThis as { reportError?: (error: unknown) => void }).reportError
    if (report) report(error)
    else
      setTimeout(() => {
        throw error
      })
  }
}

/** The `{ error, code }` of a refusal as a `RunStreamError`. */
async function answerError(response: Response): Promise<RunStreamError> {
  const text = await response.text().catch(() => '')
  let body: { error?: unknown; code?: unknown } | undefined
  try {
    body = JSON.parse(text)
  } catch {
    body = undefined
  }
  const message = typeof body?.error === 'string' ? body.error : text.slice(0, 200) || `HTTP ${response.status}`
  return new RunStreamError(response.status, typeof body?.code === 'string' ? body.code : 'HTTP_ERROR', message)
}

/** `Retry-After` in milliseconds, when it is a number of seconds (RFC 9110 §10.2.3). */
function retryAfter(response: Response): number | undefined {
  const value = Number(response.headers.get('retry-after') ?? Number.NaN)
  return Number.isFinite(value) && value >= 0 ? value * 1000 : undefined
}

function delayOption(value: unknown, fallback: number, name: string): number {
  if (value === undefined) return fallback
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
    throw new RangeError(`subscribeRun(): ${name} must be a number of milliseconds, 0 or more (got ${String(value)})`)
  }
  return value
}

/** Resolves after `ms`, or at once when `signal` aborts. */
function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve()
    const done = () => {
      clearTimeout(timer)
      signal.removeEventListener('abort', done)
      resolve()
    }
    const timer = setTimeout(done, ms)
    signal.addEventListener('abort', done)
  })
}
