/**
 * `svc/vercel`: runs an app as one Vercel Node.js function (Build Output API
 * v3, `launcherType: "Nodejs"`), plus the cron requests that `config.json`'s
 * `crons` send to `/__svc/cron`.
 */
import { CronRunFailedError, fireCron } from '../../src/runtime/cron.ts'
import { processEnv } from '../../src/runtime/env.ts'
import { createSvcHandler, type SvcHandlerOptions } from '../../src/runtime/handler.ts'
import { timingSafeEqual } from '../../src/runtime/admin/auth.ts'
import { taskSecret } from '../../src/runtime/rules.ts'

/** The path that Vercel's cron requests hit; `?cron=<expression>` names the schedule. */
export const CRON_PATH = '/__svc/cron'

/** The parts of Node's `IncomingMessage` the shim reads. */
export interface NodeRequestLike extends AsyncIterable<Uint8Array | string> {
  method?: string
  url?: string
  headers: Record<string, string | string[] | undefined>
  socket?: { remoteAddress?: string; encrypted?: boolean }
}

/** The parts of Node's `ServerResponse` the shim writes. */
export interface NodeResponseLike {
  statusCode: number
  setHeader(name: string, value: string | string[]): unknown
  write(chunk: Uint8Array): unknown
  end(chunk?: Uint8Array | string): unknown
  /** Cuts the connection: how a body that fails midway is reported once the headers are out. */
  destroy?(): unknown
  /** `'close'` tells the shim the client went away, so a streamed body stops. */
  once?(event: 'close', listener: () => void): unknown
  off?(event: 'close', listener: () => void): unknown
}

export type VercelApp = Omit<SvcHandlerOptions, 'env'>

interface VercelRequestContext {
  get?: () => { waitUntil?: (promise: Promise<unknown>) => void } | undefined
}

/**
 * Vercel exposes `waitUntil` through a request context on `globalThis`
 * (what `@vercel/functions` reads). Without it, pending work is awaited before
 * the response is sent, as on any platform that freezes after the response.
 */
function platformWaitUntil(): ((promise: Promise<unknown>) => void) | undefined {
  const ctx = (globalThis as Record<symbol, VercelRequestContext | undefined>)[Symbol.for('@vercel/request-context')]
  return ctx?.get?.()?.waitUntil
}

export function createVercelHandler(app: VercelApp): (req: NodeRequestLike, res: NodeResponseLike) => Promise<void> {
  const env = processEnv()
  const core = createSvcHandler({ ...app, env })
  return async (req, res) => {
    const request = await toWebRequest(req)
    if (new URL(request.url).pathname === CRON_PATH) return send(res, await cron(request))
    const pending: Promise<unknown>[] = []
    const waitUntil = platformWaitUntil() ?? ((promise: Promise<unknown>) => void pending.push(promise))
    const response = await core.fetch(request, { waitUntil })
    // Held before the answer, not after: the function may be frozen as soon
    // as the response ends, which would stop a run halfway.
    await Promise.allSettled(pending)
    await send(res, response)
  }

  async function cron(request: Request): Promise<Response> {
    // Vercel sends `Authorization: Bearer $CRON_SECRET` when that variable is set.
    const secret = env.CRON_SECRET || taskSecret(env)
    if (!secret) {
      return Response.json(
        { error: 'Cron requests need a secret: set CRON_SECRET in the project environment.', code: 'UNAUTHORIZED' },
        { status: 401, headers: { 'www-authenticate': 'Bearer' } },
      )
    }
    if (!timingSafeEqual(request.headers.get('authorization') ?? '', `Bearer ${secret}`)) {
      return Response.json(
        { error: 'Missing or wrong bearer token for the cron endpoint.', code: 'UNAUTHORIZED' },
        { status: 401, headers: { 'www-authenticate': 'Bearer' } },
      )
    }
    const expression = new URL(request.url).searchParams.get('cron')
    if (!expression) return Response.json({ error: 'Missing ?cron=<expression>', code: 'BAD_REQUEST' }, { status: 400 })
    // Vercel counts a cron invocation as failed by its status code.
    return fireCron(core.runtime, expression).then(
      (summary) => Response.json(summary),
      (error) => {
        if (error instanceof CronRunFailedError) return Response.json(error, { status: error.status })
        throw error
      },
    )
  }
}

async function toWebRequest(req: NodeRequestLike): Promise<Request> {
  const headers = new Headers()
  for (const [name, value] of Object.entries(req.headers)) {
    if (Array.isArray(value)) for (const item of value) headers.append(name, item)
    else if (value !== undefined) headers.set(name, value)
  }
  const proto = headers.get('x-forwarded-proto') ?? (req.socket?.encrypted ? 'https' : 'http')
  const url = `${proto}://${headers.get('host') ?? 'localhost'}${req.url ?? '/'}`
  const method = (req.method ?? 'GET').toUpperCase()
  let body: Uint8Array<ArrayBuffer> | undefined
  if (method !== 'GET' && method !== 'HEAD') {
    const chunks: Uint8Array[] = []
    for await (const chunk of req) chunks.push(typeof chunk === 'string' ? new TextEncoder().encode(chunk) : chunk)
    body = concat(chunks)
  }
  return new Request(url, { method, headers, body })
}

async function send(res: NodeResponseLike, response: Response): Promise<void> {
  res.statusCode = response.status
  const cookies = response.headers.getSetCookie()
  response.headers.forEach((value, name) => {
    if (name !== 'set-cookie') res.setHeader(name, value)
  })
  if (cookies.length) res.setHeader('set-cookie', cookies)
  if (!response.body) {
    res.end()
    return
  }
  const reader = response.body.getReader()
  let finished = false
  // A client that left stops the stream; an endless body (server-sent
  // events) would otherwise be read until the function's timeout.
  const onClose = () => {
    if (!finished) reader.cancel().catch(() => {})
  }
  res.once?.('close', onClose)
  try {
    for (let next = await reader.read(); !next.done; next = await reader.read()) res.write(next.value)
  } catch (error) {
    // The status line is out, so an error status is no longer possible: cut
    // the connection, so the client sees a truncated body instead of waiting.
    res.destroy?.()
    throw error
  } finally {
    finished = true
    res.off?.('close', onClose)
  }
  res.end()
}

function concat(chunks: Uint8Array[]): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0))
  let offset = 0
  for (const chunk of chunks) {
    out.set(chunk, offset)
    offset += chunk.length
  }
  return out
}
