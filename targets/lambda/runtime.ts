/**
 * `svc/lambda`: runs an app as one AWS Lambda function that serves HTTP API
 * (v2) and function URL events and fires cron tasks for schedule events.
 */
import { fireCron, type CronSummary } from '../../src/runtime/cron.ts'
import { processEnv } from '../../src/runtime/env.ts'
import { warnInstanceStore } from '../../src/runtime/function-store.ts'
import { createSvcHandler, type SvcHandlerOptions } from '../../src/runtime/handler.ts'
import type { AWSLambdaContext } from 'srvx'
import { handleLambdaEvent } from 'srvx/aws-lambda'
import { forSrvx, isHttpEventV2, isScheduleEvent, toResult, type HttpResultV2 } from './events.ts'

export type { HttpEventV2, HttpResultV2, ScheduleEvent } from './events.ts'

export type LambdaApp = Omit<SvcHandlerOptions, 'env'>

export type LambdaHandler = (event: unknown, context?: unknown) => Promise<HttpResultV2 | CronSummary>

/**
 * Lambda freezes the process once the handler returns, so work handed to
 * `waitUntil` (a task started by `POST /__tasks/<name>`) is awaited before the
 * response is returned. The 202 body is the same; it arrives when the run has
 * settled, within the function's own timeout.
 *
 * A schedule event resolves with the summary of the fired runs, or rejects
 * when one failed, so the invocation counts as failed for the scheduler's
 * retries and dead-letter queue.
 */
export function createLambdaHandler(app: LambdaApp): LambdaHandler {
  const core = createSvcHandler({ ...app, env: processEnv() })
  warnInstanceStore('Lambda', core.runtime, app.runtime !== undefined, app.logger)
  return async (event, context) => {
    if (isScheduleEvent(event)) return fireCron(core.runtime, event.svcCron, event.svcTimezone)
    if (isHttpEventV2(event)) {
      const pending: Promise<unknown>[] = []
      let response: Response | undefined
      // srvx's adapter turns the event into the Request. The result is built
      // by toResult() instead of srvx (see there why), so srvx is handed an
      // empty answer to convert, and the app's body is read once.
      await handleLambdaEvent(
        async (request) => {
          response = await core.fetch(request, { waitUntil: (promise) => void pending.push(promise) })
          return new Response(null, { status: 204 })
        },
        forSrvx(event),
        context as AWSLambdaContext,
      )
      const result = await toResult(response!)
      await Promise.allSettled(pending)
      return result
    }
    throw new TypeError(
      'svc/lambda: unsupported event. Expected an API Gateway HTTP API (payload 2.0) or function URL event, ' +
        'or a schedule event { "svcCron": "<expression>" } (see schedules.json).',
    )
  }
}
