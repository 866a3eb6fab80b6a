/**
 * Events with many runs waiting, for bench/store.ts. On a store holding
 * `WAITING_OTHERS` runs suspended on `ctx.step.waitForEvent` for other
 * event names (`OTHER_NAMES` of them) and `WAITING_E` runs waiting on the
 * event `E`:
 * - events/s of `sendEvent()` of an event one task starts on, each
 *   starting one no-op run, from the first send to the last run's end
 *   (bench/store.ts's events measurement), as a ratio to `trigger()` no-op
 *   runs/s on a fresh store of the same kind measured just before: the
 *   baseline. A send must find the waits on its own name without paying
 *   for the waits on others. Goal: at least `EVENT_WAITS_GOAL`.
 * - one send of `E`: from `sendEvent('E')` to the last of its `WAITING_E`
 *   runs resumed (the line after its wait).
 */
import { MAX_BATCH_ITEMS } from '../src/runtime/tasks/index.ts'
import { deferred } from './_store-measure.ts'
import { arm, eventRate, type OpenStore, RUNS, svcRate, suspended, withRuntime } from './_store-svc.ts'

export const WAITING_OTHERS = 10_000
export const WAITING_E = 1_000
/** The other names the `WAITING_OTHERS` runs wait on, as many runs on each. */
const OTHER_NAMES = 100
export const EVENT_WAITS_GOAL = 0.5

export interface EventWaitFigures {
  /** `trigger()` no-op runs/s on a fresh store. */
  baseline: number
  /** Events/s sent beside the waiting runs, each starting one no-op run. */
  events: number
  /** Milliseconds from the send of `E` to the last of its waiting runs resumed. */
  resumeAllMs: number
}

/** The figures on stores made by `open`; `label` names them apart from the other measurements' stores. */
export async function measureEventWaits(open: OpenStore, label: string): Promise<EventWaitFigures> {
  await svcRate(open, `${label}_warm`, 'noop')
  const baseline = await svcRate(open, `${label}_baseline`, 'noop')
  return withRuntime(open, `${label}_crowd`, async (rt) => {
    // The waiting runs started in batches and suspended on their waits, outside the time.
    const payloads = [
      ...Array.from({ length: WAITING_OTHERS }, (_, i) => ({ event: `bench.other.${i % OTHER_NAMES}` })),
      ...Array.from({ length: WAITING_E }, () => ({ event: 'E' })),
    ]
    for (let from = 0; from < payloads.length; from += MAX_BATCH_ITEMS) {
      const items = await rt.triggerMany('event-waiter', payloads.slice(from, from + MAX_BATCH_ITEMS))
      if (items.some((item) => !item.ok)) throw new Error('bench:store event waits: a waiting run did not start')
    }
    await suspended(rt, 'event-waiter', payloads.length)

    arm(() => {})
    await eventRate(rt, 200) // warm-up: this store's statements prepared
    const events = await eventRate(rt, RUNS)

    let resumed = 0
    const last = deferred<number>()
    arm(() => {
      if (++resumed === WAITING_E) last.resolve(performance.now())
    })
    const t0 = performance.now()
    const sent = await rt.sendEvent('E')
    if (sent.resumed.length !== WAITING_E) {
      throw new Error(`bench:store event waits: the send of E met ${sent.resumed.length} waits, not ${WAITING_E}`)
    }
    const resumeAllMs = (await last.promise) - t0
    arm(() => {})
    return { baseline, events, resumeAllMs }
  })
}
