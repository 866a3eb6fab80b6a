/**
 * `GET /__tasks/events`: the runtime's run changes as Server-Sent Events
 * (WHATWG HTML, "Server-sent events"). Each change is one `data:` line of
 * JSON, `{ id, taskName, status }`; a comment line every
 * `SSE_HEARTBEAT_MS` keeps proxies from closing an idle stream. The stream
 * ends when the client goes away, and when the runtime drains or closes,
 * so an open stream never holds a server's graceful shutdown.
 */
import type { RunChange, TaskRuntime } from '../types.ts'
import type { ResponseClass } from '../app/types.ts'

/** How often an idle event stream sends a comment. */
export const SSE_HEARTBEAT_MS = 15_000

const encoder = new TextEncoder()

/** `listen` is the runtime's `onRunChange`. */
export function runEventStream(
  listen: NonNullable<TaskRuntime['onRunChange']>,
  R: ResponseClass,
  heartbeatMs = SSE_HEARTBEAT_MS,
): Response {
  let closed = false
  let stop: (() => void) | undefined
  let heartbeat: ReturnType<typeof setInterval> | undefined
  const cleanup = () => {
    closed = true
    clearInterval(heartbeat)
    stop?.()
  }
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      const send = (text: string) => {
        if (!closed) controller.enqueue(encoder.encode(text))
      }
      const end = () => {
        if (closed) return
        cleanup()
        controller.close()
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
  })
  return new R(body, {
    status: 200,
    headers: { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-store', 'x-accel-buffering': 'no' },
  })
}
