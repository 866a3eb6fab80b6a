/**
 * `GET /__tasks/runs/<id>/stream`, and `GET /__tasks/<id>/stream`: one
 * run's progress as Server-Sent Events, for an app's pages
 * (docs/realtime.md). Each event is one `data:` line of JSON, a
 * `RunProgress`:
 * - the first is the run as it is now;
 * - then one each time it changes. The runtime's run changes for this run
 *   (`onRunChange`, which on a shared store carries the other processes'
 *   too) are read back from the store at once; a read every
 *   `RUN_STREAM_REFRESH_MS` catches what that feed does not report: steps
 *   recorded while the status stays, and any change of another process
 *   that feed missed. A read equal to the last event sends nothing;
 * - the event of a finished status carries `id: done`, and the stream ends
 *   after it. `EventSource` connects again after any end, sending
 *   `Last-Event-ID: done`; that request is answered 204, which tells it to
 *   stop (WHATWG HTML, "Server-sent events").
 *
 * The data chunks the run sends (`ctx.stream`, run-chunks.ts) come as
 * events of their own, `event: chunk` with `id: <seq>` and the `RunChunk`
 * as data, before the progress read with them: first those the run keeps,
 * then each new one, read again at once when this process stored it. The
 * id is the last event id a client sends back when it connects again
 * (`Last-Event-ID: <seq>`), and the stream then starts after that chunk.
 *
 * A stream also ends when the run token it was opened with expires, when
 * the run leaves the store, and when the runtime drains or closes. It
 * counts against the limits of every event stream (`events.ts`). Who may
 * read is `run-access.ts`; which pages may, `cors.ts`.
 */
import type { Logger, RunRecord, TaskRuntime } from '../types.ts'
import { errorMessage } from '../errors.ts'
import { internalError, jsonError, knownErrorResponse } from '../http/errors.ts'
import { isFinished } from '../tasks/store/store.ts'
import { allowedOrigins, corsHeaders, withHeaders } from './cors.ts'
import { type EventFeed, openEventStream } from './run-change-stream.ts'
import { runAccess } from './run-access.ts'
import { runProgress } from './run-progress.ts'
import { onChunksStored } from '../tasks/steps/run-chunks.ts'
import { DONE, notStreamed, RUNS_ELSEWHERE, type RunStreamHandler, runStreamPreamble, type StreamsOptions } from './streams.ts'

/** How often an open stream reads its run again, for changes the runtime does not report. */
export const RUN_STREAM_REFRESH_MS = 1000

export function createRunStreamHandler(options: StreamsOptions): RunStreamHandler {
  const { runtime, env, R, logger, dev, loopback } = options
  const allowed = allowedOrigins(options.runEvents?.origins, env)

  const answer: RunStreamHandler = async (request, runId, info) => {
    const cors = corsHeaders(request, allowed)
    const early = runStreamPreamble(request, allowed, R, cors)
    if (early) return early
    const access = await runAccess(request, runId, { info, env, R, headers: cors, loopback })
    if (!access.ok) return access.response
    const listen = runtime.onRunChange?.bind(runtime)
    if (!listen) return notStreamed(R, RUNS_ELSEWHERE, runId, cors)
    const run = await runtime.getRun(runId)
    if (!run) return jsonError(R, 404, 'RUN_NOT_FOUND', `No run has id "${runId}"`, cors)
    if (request.method === 'HEAD') {
      return new R(null, {
        status: 200,
        headers: { ...cors, 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-store' },
      })
    }
    const feed = runFeed(runtime, listen, run, access.expiresAt, logger, chunksSeen(request))
    return openEventStream(runtime, R, logger, options.runEvents, {
      feed,
      label: `GET /__tasks/runs/${runId}/stream`,
      instead: `poll GET /__tasks/runs/${runId}`,
      headers: cors,
      // A run token is handed to a browser: its streams count against its own shares (events.ts).
      ...(access.token === undefined ? {} : { holder: { token: access.token, address: info?.remoteAddress } }),
    })
  }

  return async (request, runId, info) => {
    try {
      return await answer(request, runId, info)
    } catch (error) {
      const known = knownErrorResponse(R, error)
      if (!known) logger.error(`[svc] ${request.method} stream of run ${runId} failed:`, error)
      return withHeaders(R, known ?? internalError(R, error, dev), corsHeaders(request, allowed))
    }
  }
}

/** The SSE type of a chunk's event. */
export const CHUNK_EVENT = 'chunk'

/** The seq of the last chunk a client that connects again has seen (its `Last-Event-ID`), or 0. */
function chunksSeen(request: Request): number {
  const id = request.headers.get('last-event-id')
  return id !== null && /^\d{1,15}$/.test(id) ? Number(id) : 0
}

/**
 * The events of run `first.id`: `first` at once, then the run as the store
 * holds it after each change, until it finishes; the chunks after `seen`
 * before each. `expiresAt` (Unix seconds) ends it when the token that
 * opened it expires.
 */
function runFeed(
  runtime: TaskRuntime,
  listen: NonNullable<TaskRuntime['onRunChange']>,
  first: RunRecord,
  expiresAt: number | undefined,
  logger: Logger,
  seen: number,
): EventFeed {
  const runId = first.id
  return (send, end) => {
    let over = false
    let last = ''
    let lastSeq = seen
    // One read at a time; a change during a read asks for one more after it.
    let reading = false
    let again = false
    let unlisten: (() => void) | undefined
    let unwatch: (() => void) | undefined
    let refresh: ReturnType<typeof setInterval> | undefined
    let expiry: ReturnType<typeof setTimeout> | undefined

    const stop = () => {
      if (over) return
      over = true
      unlisten?.()
      unwatch?.()
      clearInterval(refresh)
      clearTimeout(expiry)
    }
    const finish = () => {
      stop()
      end()
    }
    const show = (run: RunRecord) => {
      for (const chunk of run.chunks?.kept ?? []) {
        if (chunk.seq <= lastSeq) continue
        lastSeq = chunk.seq
        send(JSON.stringify(chunk), String(chunk.seq), CHUNK_EVENT)
      }
      const text = JSON.stringify(runProgress(run))
      const done = isFinished(run.status)
      if (text !== last) {
        last = text
        send(text, done ? DONE : undefined)
      }
      if (done) finish()
    }
    const read = async () => {
      if (over) return
      if (reading) {
        again = true
        return
      }
      reading = true
      try {
        do {
          again = false
          const run = await runtime.getRun(runId)
          if (over) return
          // Only finished runs leave a store: this one will not change again.
          if (!run) return finish()
          show(run)
        } while (again && !over)
      } catch (error) {
        // The client connects again and starts from a fresh read.
        logger.error(`[svc] GET /__tasks/runs/${runId}/stream: reading the run failed, ending the stream: ${errorMessage(error)}`)
        finish()
      } finally {
        reading = false
      }
    }

    show(first)
    if (over) return stop
    // Subscribed after the first read: the read below catches a change made in between.
    unlisten = listen((change) => {
      if (change.id === runId) void read()
    }, finish)
    if (over) return stop
    unwatch = onChunksStored(runId, () => void read())
    refresh = setInterval(() => void read(), RUN_STREAM_REFRESH_MS)
    unref(refresh)
    if (expiresAt !== undefined) {
      expiry = setTimeout(finish, Math.max(0, expiresAt * 1000 - Date.now()))
      unref(expiry)
    }
    void read()
    return stop
  }
}

/** `unref` exists in Node and Deno, not in workers: a stream alone must not keep a process alive. */
function unref(timer: ReturnType<typeof setTimeout>): void {
  ;(timer as { unref?: () => void }).unref?.()
}
