/**
 * `svcjs/lambda`: runs an app as one AWS Lambda function that serves HTTP API
 * (v2) and function URL events, fires cron tasks for schedule events and
 * sweeps due work for the tick event.
 */
import '#svc/runtime/node-version.ts'
import type { CronSummary } from '#svc/runtime/cron.ts'
import { processEnv } from '#svc/runtime/env.ts'
import { functionHost, type FunctionApp, type TickSummary } from '#svc/functions/host.ts'
import type { AWSLambdaContext } from 'srvx'
import { handleLambdaEvent } from 'srvx/aws-lambda'
import { forSrvx, isHttpEventV2, isScheduleEvent, isTickEvent, toResult, type HttpResultV2, withForwardedProto } from './events.ts'

export type { HttpEventV2, HttpResultV2, ScheduleEvent, TickEvent } from './events.ts'
export type { TickSummary } from '#svc/functions/host.ts'

export type LambdaApp = FunctionApp
export type { FunctionApp }

export type LambdaHandler = (event: unknown, context?: unknown) => Promise<HttpResultV2 | CronSummary | TickSummary>

/**
 * How long before the invocation's own timeout a tick or a held run stops
 * waiting, so the function answers before Lambda cuts it off (its default
 * timeout is 3 s).
 */
export const LAMBDA_MARGIN_MS = 1000

/** Without a context (a local call), how long a tick or a held run waits at most. */
const WITHOUT_CONTEXT_MS = 30_000

/**
 * Lambda freezes the process once the handler returns, so work handed to
 * `waitUntil` (a task started by `POST /__tasks/<name>`) is awaited before the
 * response is returned. The 202 body is the same; it arrives when the run has
 * settled, within the function's own timeout. With `SVC_STORE_URL` naming a
 * Postgres store the run is held to its end or its first wait only; the
 * tick event (`{ "svcTick": true }`, every minute) picks it up from there.
 *
 * A schedule event resolves with the summary of the fired runs, or rejects
 * when one failed, so the invocation counts as failed for the scheduler's
 * retries and dead-letter queue.
 */
export function createLambdaHandler(app: LambdaApp): LambdaHandler {
  const host = functionHost('Lambda', app, processEnv())
  return async (event, context) => {
    if (isTickEvent(event)) return host.tick(deadline(context))
    if (isScheduleEvent(event)) return host.cron(event.svcCron, event.svcTimezone, deadline(context))
    const core = await host.core()
    if (isHttpEventV2(event)) {
      const pending: Promise<unknown>[] = []
      let response: Response | undefined
      // srvx's adapter turns the event into the Request. The result is built
      // by toResult() instead of srvx (see there why), so srvx is handed an
      // empty answer to convert, and the app's body is read once.
      await handleLambdaEvent(
        async (request) => {
          response = await core.fetch(withForwardedProto(request, event.headers), { waitUntil: (promise) => void pending.push(promise) })
          return new Response(null, { status: 204 })
        },
        forSrvx(event),
        context as AWSLambdaContext,
      )
      const result = await toResult(response!)
      await Promise.allSettled(pending)
      await host.settle(deadline(context))
      return result
    }
    throw new TypeError(
      'svcjs/lambda: unsupported event. Expected an API Gateway HTTP API (payload 2.0) or function URL event, ' +
        'a schedule event { "svcCron": "<expression>" } or the tick { "svcTick": true } (see schedules.json).',
    )
  }
}

/** When a tick or a held run stops waiting: the invocation's timeout less a margin. */
function deadline(context: unknown): number {
  const remaining = (context as { getRemainingTimeInMillis?: () => number } | undefined)?.getRemainingTimeInMillis?.()
  return Date.now() + (typeof remaining === 'number' ? Math.max(0, remaining - LAMBDA_MARGIN_MS) : WITHOUT_CONTEXT_MS)
}
