/**
 * Requests to the task admin surface. The task secret, when the user gives
 * one, lives in sessionStorage only (never a URL or a cookie) and travels as
 * `Authorization: Bearer`, so the event stream is read with fetch():
 * EventSource cannot send headers.
 */
import { EventStreamReader } from '../client/event-stream.ts'

const SECRET_KEY = 'svc.taskSecret'

/** Where the app is mounted: the page's path without `/__svc/dashboard`. */
const base = location.pathname.replace(/\/__svc\/dashboard\/?$/, '')

export class ApiError extends Error {
  readonly status: number
  readonly code: string
  readonly details: { target?: string; path?: (string | number)[]; message: string }[]
  constructor(status: number, body: { error?: string; code?: string; details?: ApiError['details'] }) {
    super(body.error ?? `HTTP ${status}`)
    this.status = status
    this.code = body.code ?? 'HTTP_ERROR'
    this.details = Array.isArray(body.details) ? body.details : []
  }
}

export const secret = {
  get: (): string | null => sessionStorage.getItem(SECRET_KEY),
  set: (value: string): void => sessionStorage.setItem(SECRET_KEY, value),
  clear: (): void => sessionStorage.removeItem(SECRET_KEY),
}

function headers(extra?: Record<string, string>): Record<string, string> {
  const value = secret.get()
  return value ? { ...extra, authorization: `Bearer ${value}` } : { ...extra }
}

/** `extra` headers go with the secret, such as the `Idempotency-Key` that names a signal. */
export async function api<T>(
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE',
  path: string,
  body?: unknown,
  extra?: Record<string, string>,
): Promise<T> {
  const init: RequestInit = { method, headers: headers(body === undefined ? extra : { ...extra, 'content-type': 'application/json' }) }
  if (body !== undefined) init.body = JSON.stringify(body)
  const res = await fetch(base + path, init)
  const text = await res.text()
  let parsed: unknown
  try {
    parsed = text ? JSON.parse(text) : undefined
  } catch {
    parsed = { error: text }
  }
  if (!res.ok) throw new ApiError(res.status, (parsed ?? {}) as ConstructorParameters<typeof ApiError>[1])
  return parsed as T
}

export interface RunEvent {
  id: string
  taskName: string
  status: string
}

/**
 * Reads `/__tasks/events` (server-sent events) until `signal` aborts,
 * reconnecting after a dropped stream. `onState` says whether the stream is
 * open, so the page can show that updates are live.
 */
export async function watchEvents(
  onEvent: (event: RunEvent) => void,
  onState: (live: boolean) => void,
  signal: AbortSignal,
): Promise<void> {
  let delay = 500
  while (!signal.aborted) {
    try {
      const res = await fetch(`${base}/__tasks/events`, { headers: headers({ accept: 'text/event-stream' }), signal })
      if (!res.ok || !res.body) throw new ApiError(res.status, {})
      onState(true)
      delay = 500
      const reader = res.body.pipeThrough(new TextDecoderStream()).getReader()
      // svcjs/client's reader: linear in what arrives, however the network cuts it.
      const events = new EventStreamReader()
      for (;;) {
        const { value, done } = await reader.read()
        if (done) break
        for (const event of events.push(value)) onEvent(JSON.parse(event.data) as RunEvent)
      }
    } catch {
      // Reconnect below, unless the page stopped watching.
    }
    if (signal.aborted) return
    onState(false)
    await new Promise((resolve) => setTimeout(resolve, delay))
    delay = Math.min(delay * 2, 10_000)
  }
}
