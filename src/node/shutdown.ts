/**
 * The HTTP half of a graceful shutdown (docs/internals/http-server.md
 * "Shutdown"): every request is
 * counted while it is in flight, and once the drain begins a request that
 * arrives on a keep-alive connection still open gets a 503 it can retry on a
 * new connection instead of a reset. `close()` waits for the count to reach
 * zero, up to a deadline.
 */
import type { ServerResponse } from 'node:http'
import { FastResponse } from 'srvx/node'

const DRAINING_BODY = JSON.stringify({ error: 'The server is shutting down; retry on another connection', code: 'SHUTTING_DOWN' })
// RFC 9112 §9.6: "close" makes the client open a new connection, which reaches a live instance.
const DRAINING_HEADERS = {
  'content-type': 'application/json',
  'content-length': String(Buffer.byteLength(DRAINING_BODY)),
  connection: 'close',
}

export interface Drain {
  /** Counts the request `res` answers until its response is written or its client is gone; returns the 503 to send while draining. */
  admit(res: ServerResponse): Response | undefined
  /** True once `begin()` was called. */
  readonly draining: boolean
  /** Requests whose response is not finished. */
  readonly inflight: number
  /** Starts answering 503. */
  begin(): void
  /** Resolves `true` once no request is in flight, or `false` at `deadline` (epoch ms). */
  idle(deadline: number): Promise<boolean>
}

export function createDrain(): Drain {
  let draining = false
  let inflight = 0
  let onIdle: (() => void) | undefined
  const done = () => {
    if (--inflight === 0 && onIdle) onIdle()
  }
  return {
    admit(res) {
      inflight++
      // 'close' fires once, when the response is fully written or the client is gone.
      res.on('close', done)
      return draining ? new FastResponse(DRAINING_BODY, { status: 503, headers: DRAINING_HEADERS }) : undefined
    },
    get draining() {
      return draining
    },
    get inflight() {
      return inflight
    },
    begin() {
      draining = true
    },
    idle(deadline) {
      if (inflight === 0) return Promise.resolve(true)
      return new Promise((resolve) => {
        const timer = setTimeout(() => resolve(inflight === 0), Math.max(0, deadline - Date.now()))
        onIdle = () => {
          clearTimeout(timer)
          resolve(true)
        }
      })
    },
  }
}

/** Whether `promise` settles before `deadline` (epoch ms). */
export async function within(promise: Promise<unknown>, deadline: number): Promise<boolean> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const settled = await Promise.race([
    promise.then(() => true),
    new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), Math.max(0, deadline - Date.now())))),
  ])
  clearTimeout(timer)
  return settled
}
