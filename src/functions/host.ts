/**
 * What the Lambda and Vercel shims share about runs. A function has no
 * process between invocations, so on a store that several instances share
 * (`SVC_STORE_URL=postgres://…`):
 * - an invocation that answered a request holds the runs it started to
 *   their end or their first wait (`settle`), not through their sleeps;
 * - a one-minute tick, which `svc build` schedules, claims due timers and
 *   lapsed leases and runs what they stand for (`tick`), so a sleep on a
 *   function resolves within about a minute of its due time.
 * Without `SVC_STORE_URL` runs stay in the instance's memory, as before.
 */
import { type CronSummary, fireCron } from '../runtime/cron.ts'
import { warnInstanceStore } from '../runtime/function-store.ts'
import { createSvcHandler, type SvcHandler, type SvcHandlerOptions } from '../runtime/handler.ts'
import { createTaskRuntime } from '../runtime/tasks/index.ts'
import { STORE_URL_ENV, storeFromEnv } from '../node/store-url.ts'

export type FunctionApp = Omit<SvcHandlerOptions, 'env'>

/** What a tick invocation answers: how many attempts were still in flight at its deadline. */
export interface TickSummary {
  ok: true
  inFlight: number
}

export interface FunctionHost {
  /** The app's handler; on the first call with `SVC_STORE_URL` set, once the store is open. */
  core(): Promise<SvcHandler>
  /**
   * After a request: on a shared store, waits for the runs the invocation
   * started until each ends or waits, at most until `untilMs` (epoch ms).
   * Elsewhere the handler holds them itself (`holdRuns`).
   */
  settle(untilMs: number): Promise<void>
  /** The tick: one sweep of due work, then its attempts, until `untilMs`. */
  tick(untilMs: number): Promise<TickSummary>
  /**
   * A cron event (`fireCron`). On a shared store the fired runs are held as
   * a request's are, to their end or first wait and at most until
   * `untilMs`, and the summary gives each run's status at that point; a
   * sleep does not hold the invocation, the tick finishes it. Elsewhere
   * each run is waited for to its end.
   */
  cron(cron: string, timezone: string | undefined, untilMs: number): Promise<CronSummary>
}

export function functionHost(platform: string, app: FunctionApp, env: Record<string, string | undefined>): FunctionHost {
  let shared = false
  let opening: Promise<SvcHandler> | undefined
  if (app.runtime || !env[STORE_URL_ENV]?.trim()) {
    const core = createSvcHandler({ ...app, env })
    shared = Boolean(app.runtime?.store?.shared)
    warnInstanceStore(platform, core.runtime, app.runtime !== undefined, app.logger)
    opening = Promise.resolve(core)
  }

  async function open(): Promise<SvcHandler> {
    const { store } = await storeFromEnv(env, { defaultStore: 'memory' })
    shared = store.shared !== undefined
    const runtime = createTaskRuntime({ routes: app.routes, events: app.events, env, logger: app.logger, store, telemetry: app.telemetry })
    // On a shared store, settle() holds a run to its first wait; the handler
    // would hold it through its sleeps.
    const core = createSvcHandler({ ...app, env, runtime, holdRuns: !shared })
    if (!shared) warnInstanceStore(platform, runtime, false, app.logger)
    return core
  }

  const host: FunctionHost = {
    core() {
      // A database that is down at a cold start fails that invocation with
      // the reason; the next one tries again.
      opening ??= open().catch((error: unknown) => {
        opening = undefined
        throw error
      })
      return opening
    },
    async settle(untilMs) {
      if (!shared) return
      await (await host.core()).runtime.sweep?.({ untilMs, claim: false })
    },
    async tick(untilMs) {
      const { runtime } = await host.core()
      const { inFlight } = (await runtime.sweep?.({ untilMs })) ?? { inFlight: 0 }
      return { ok: true, inFlight }
    },
    async cron(cron, timezone, untilMs) {
      const { runtime } = await host.core()
      if (!shared) return fireCron(runtime, cron, timezone)
      return fireCron(runtime, cron, timezone, async (started) => {
        await host.settle(untilMs)
        return Promise.all(started.map(async (run) => (await runtime.getRun(run.id)) ?? run))
      })
    },
  }
  return host
}
