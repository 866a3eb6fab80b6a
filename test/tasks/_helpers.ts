import { afterEach, vi } from 'vitest'
import { createTaskRuntime, type TaskRuntimeInstance, type TaskRuntimeOptions } from '../../src/runtime/tasks/index.ts'
import { MemoryRunStore } from '../../src/runtime/tasks/store/memory-store.ts'
import type { EventRecord } from '../../src/runtime/tasks/store/store.ts'
import type { RouteConfig, RouteModule, RunRecord, RuntimeApiRoute, TaskContext } from '../../src/types.ts'
import { type RecordingLogger, recordingLogger, wallClock } from '../_helpers.ts'

export { type RecordingLogger, recordingLogger, sleep, until, untimed, untimedSteps } from '../_helpers.ts'

/** A promise and the function that resolves it, for a test to release a handler when it chooses. */
export function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void
  const promise = new Promise<T>((r) => (resolve = r))
  return { promise, resolve }
}

/** A hand-written task route: `/api/<name with dots as slashes>`. */
export function task(
  name: string,
  POST: (ctx: TaskContext<any>) => unknown,
  extra: { route?: Omit<RouteConfig, 'kind'>; input?: unknown; schedule?: string } = {},
): RuntimeApiRoute {
  const module: RouteModule = { route: { kind: 'task', ...extra.route }, POST }
  if (extra.input !== undefined) module.input = extra.input as RouteModule['input']
  if (extra.schedule !== undefined) module.schedule = extra.schedule
  return { path: `/api/${name.split('.').join('/')}`, module }
}

const open: TaskRuntimeInstance[] = []
afterEach(async () => {
  vi.useRealTimers()
  for (const rt of open.splice(0)) await rt.close()
})

/** A runtime with a recording logger, closed after each test. */
export function runtime(
  routes: RuntimeApiRoute[],
  options: Partial<TaskRuntimeOptions> = {},
): TaskRuntimeInstance & { logger: RecordingLogger } {
  const logger = recordingLogger()
  const rt = createTaskRuntime({ routes, logger, env: {}, ...options })
  open.push(rt)
  return Object.assign(rt, { logger: (options.logger as RecordingLogger | undefined) ?? logger })
}

/** The run once it finished, or a clear failure after a generous bound (on the wall clock) instead of the test timeout. */
export async function finished(wait: Promise<RunRecord>): Promise<RunRecord> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const timeout = new Promise<never>((_, reject) => {
    timer = wallClock.setTimeout(() => reject(new Error('the run did not finish within 15 s')), 15_000)
  })
  return Promise.race([wait, timeout]).finally(() => wallClock.clearTimeout(timer))
}

/**
 * Under `vi.useFakeTimers()`: moves the clock `ms` forward, firing each timer that comes due
 * on the way, and returns run `id`, which must have finished by then. Retry backoffs and step
 * sleeps come due without the test waiting for them.
 */
export async function finishedAfter(rt: TaskRuntimeInstance, id: string, ms: number): Promise<RunRecord> {
  const done = finished(rt.waitForRun(id))
  // A durable store commits its writes on a real setImmediate (group
  // commit): let the attempt's writes land, and the timer they lead to be
  // armed, before the clock moves.
  for (let turn = 0; turn < 20; turn++) await new Promise((resolve) => setImmediate(resolve))
  await vi.advanceTimersByTimeAsync(ms)
  return done
}

/**
 * A memory store on which the first look of a `waitForEvent` at the events
 * already recorded finds nothing, and `sendDuring` runs right then: an
 * event sent while the run is suspending, which the send cannot meet yet.
 */
export function storeSendingDuringFirstLook(sendDuring: () => Promise<void>): MemoryRunStore {
  let first = true
  return new (class extends MemoryRunStore {
    override async eventsSince(name: string, since: string, limit: number): Promise<EventRecord[]> {
      const found = await super.eventsSince(name, since, limit)
      if (first) {
        first = false
        await sendDuring()
      }
      return found
    }
  })()
}
