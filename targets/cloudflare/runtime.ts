/**
 * `svc/cloudflare`: runs an app as a module worker. `fetch` serves the core
 * handler; `scheduled` fires the cron tasks of `controller.cron`.
 */
import { fireCron } from '../../src/runtime/cron.ts'
import { stringBindings } from '../../src/runtime/env.ts'
import { createSvcHandler, type SvcHandler, type SvcHandlerOptions } from '../../src/runtime/handler.ts'

/** The parts of the Workers `ExecutionContext` the shim uses. */
export interface ExecutionContextLike {
  waitUntil(promise: Promise<unknown>): void
}

/** The parts of the Workers `ScheduledController` the shim uses. */
export interface ScheduledControllerLike {
  cron: string
  scheduledTime?: number
}

export type WorkerApp = Omit<SvcHandlerOptions, 'env'>

export interface SvcWorker {
  fetch(request: Request, env: unknown, ctx: ExecutionContextLike): Promise<Response>
  scheduled(controller: ScheduledControllerLike, env: unknown, ctx: ExecutionContextLike): Promise<void>
}

/**
 * Bindings arrive with each event, so the handler is built on the first one.
 * Task runs live in the isolate's memory: a run started by one request can be
 * polled from the same isolate, and `waitUntil` keeps it alive until it ends.
 */
export function createWorker(app: WorkerApp): SvcWorker {
  let handler: SvcHandler | undefined
  const get = (env: unknown) => (handler ??= createSvcHandler({ ...app, env: stringBindings(env) }))
  return {
    fetch(request, env, ctx) {
      return get(env).fetch(request, { waitUntil: (promise) => ctx.waitUntil(promise) })
    },
    // Rejects when a fired run failed, so the event's outcome is `exception`.
    async scheduled(controller, env, ctx) {
      const done = fireCron(get(env).runtime, controller.cron)
      // The returned promise carries the failure; the copy held open by waitUntil would report it twice.
      ctx.waitUntil(done.catch(() => {}))
      await done
    },
  }
}
