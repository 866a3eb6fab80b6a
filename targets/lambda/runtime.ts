/**
 * `svc/lambda`: runs an app as one AWS Lambda function that serves HTTP API
 * (v2) and function URL events and fires cron tasks for schedule events.
 */
import { fireCron, type CronSummary } from '../../src/runtime/cron.ts'
import { processEnv } from '../../src/runtime/env.ts'
import { createSvcHandler, type SvcHandlerOptions } from '../../src/runtime/handler.ts'
import { isHttpEventV2, isScheduleEvent, toRequest, toResult, type HttpResultV2 } from './events.ts'

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
  return async (event) => {
    if (isScheduleEvent(event)) return fireCron(core.runtime, event.svcCron, event.svcTimezone)
    if (isHttpEventV2(event)) {
      const pending: Promise<unknown>[] = []
      const response = await core.fetch(toRequest(event), { waitUntil: (promise) => void pending.push(promise) })
      const result = await toResult(response)
      await Promise.allSettled(pending)
      return result
    }
    throw new TypeError(
      'svc/lambda: unsupported event. Expected an API Gateway HTTP API (payload 2.0) or function URL event, ' +
        'or a schedule event { "svcCron": "<expression>" } (see schedules.json).',
    )
  }
}
