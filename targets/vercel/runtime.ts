/**
 * `svcjs/vercel`: runs an app as one Vercel Node.js function (Build Output API
 * v3, `launcherType: "Nodejs"`), plus the cron requests that `config.json`'s
 * `crons` send to `/__svc/cron`: `?cron=<expression>` fires a schedule, and
 * the bare path is the one-minute tick that sweeps due work.
 */
import '#svc/runtime/node-version.ts'
import { STATUS_CODES, type IncomingMessage, type ServerResponse } from 'node:http'
import { FastResponse, NodeRequest, sendNodeResponse } from 'srvx/node'
import { CronRunFailedError } from '#svc/runtime/cron.ts'
import { processEnv } from '#svc/runtime/env.ts'
import { functionHost, type FunctionApp } from '#svc/functions/host.ts'
import { timingSafeEqual } from '#svc/runtime/admin/auth.ts'
import { taskSecret } from '#svc/runtime/rules.ts'

/** The path that Vercel's cron requests hit; `?cron=<expression>` names the schedule, its absence is the tick. */
export const CRON_PATH = '/__svc/cron'

/**
 * How long a tick, or a run held after a request on a shared store, waits
 * for attempts: 10 s, the shortest duration limit a Vercel function has by
 * default, less a 2 s margin to answer. Attempts still in flight then go on
 * while the instance lives; if it is frozen first, their leases lapse and a
 * later tick runs them again.
 */
export const VERCEL_WAIT_MS = 8000

/**
 * The `req` Vercel's Node.js launcher passes: a Node `IncomingMessage`,
 * which srvx's `NodeRequest` reads as a Web `Request` (headers, the body
 * streamed as it is read, a signal aborted when the client leaves).
 */
export type NodeRequestLike = IncomingMessage

/**
 * The `res` it passes: a Node `ServerResponse`, which srvx's
 * `sendNodeResponse` writes (every Set-Cookie on its own, stream bodies with
 * back-pressure, the stream cancelled when the client leaves).
 */
export type NodeResponseLike = ServerResponse

export type VercelApp = FunctionApp
export type { FunctionApp }

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
  const host = functionHost('Vercel', app, env)
  return async (req, res) => {
    const request = new NodeRequest({ req, res }) as unknown as Request
    if (new URL(request.url).pathname === CRON_PATH) return send(res, await cron(request))
    const core = await host.core()
    const pending: Promise<unknown>[] = []
    const waitUntil = platformWaitUntil() ?? ((promise: Promise<unknown>) => void pending.push(promise))
    const response = await core.fetch(request, { waitUntil })
    waitUntil(host.settle(Date.now() + VERCEL_WAIT_MS))
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
    if (expression === null) return Response.json(await host.tick(Date.now() + VERCEL_WAIT_MS))
    if (!expression)
      return Response.json(
        { error: 'Empty ?cron=: name the schedule, or leave the parameter out for the tick', code: 'BAD_REQUEST' },
        { status: 400 },
      )
    // Vercel counts a cron invocation as failed by its status code.
    return host.cron(expression, undefined, Date.now() + VERCEL_WAIT_MS).then(
      (summary) => Response.json(summary),
      (error) => {
        if (error instanceof CronRunFailedError) return Response.json(error, { status: error.status })
        throw error
      },
    )
  }
}

/**
 * Writes `response` on `res`. srvx writes an empty `statusText` as a blank
 * reason phrase, so a `Response` built without one gets the standard phrase
 * (RFC 9110 §15), as Node would send. A body that fails midway cuts the
 * connection (the status line is out, so an error status is no longer
 * possible) and the error is rethrown for the platform to log.
 */
async function send(res: ServerResponse, response: Response): Promise<void> {
  const named = response.statusText
    ? response
    : new FastResponse(response.body, {
        status: response.status,
        statusText: STATUS_CODES[response.status] ?? '',
        headers: response.headers,
      })
  await sendNodeResponse(res, named as Response)
  if (res.errored) throw res.errored
}
