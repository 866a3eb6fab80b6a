/**
 * The step host: what the steps of every attempt reach (`ctx.step`,
 * `steps.ts`): the store, the trigger of child runs, the logger, the
 * payload limit, and the one-time note about in-process waits.
 *
 * On a store that fences the runs it holds (`store.fences`), a write of an
 * attempt whose run another process took over (its own steps, or a child
 * it starts) rejects with `LeaseLostError`; the host tells `lostLease`
 * before the handler sees the error, so the attempt is aborted at once,
 * and a handler that catches the error runs no further step.
 */
import type { Logger, RunRecord, TriggerOptions } from '../../types.ts'
import { LeaseLostError } from '../../errors.ts'
import type { StepHost } from './steps.ts'
import type { RunStore } from '../store/store.ts'
import type { Clock } from '../base/clock.ts'

/**
 * Logged once per runtime, the first time a wait suspends a run on a store
 * that is not durable (docs/tasks.md "Waits and suspension").
 */
export const LOCAL_WAIT_NOTE =
  '[svc] ctx.step waits run in-process here: sleeps, child-task waits and tokens are kept in memory and timers, and do not survive a restart. ' +
  "For durable waits, pass a durable run store, such as SqliteRunStore from 'svcjs/node'."

export interface StepHostOptions {
  store: RunStore
  logger: Logger
  /** What steps are timed by, and sleeps and token deadlines reckoned from. */
  clock: Clock
  maxPayloadBytes: number
  /** Starts a child run. */
  trigger(name: string, payload: unknown, opts: TriggerOptions): Promise<RunRecord>
  /** A write of the attempt of run `runId` found its lease lost. */
  lostLease(runId: string): void
  /** Where each entry a run logs goes besides its record. */
  runLog?: StepHost['runLog']
  callStep?: StepHost['callStep']
  callbacks?: StepHost['callbacks']
  liveUpdates?: StepHost['liveUpdates']
}

export function createStepHost(options: StepHostOptions): StepHost {
  const { store, logger, trigger, lostLease } = options
  let noted = false
  const lost = (error: unknown): never => {
    if (error instanceof LeaseLostError) lostLease(error.runId)
    throw error
  }
  const fenced = store.fences === true
  return {
    store: fenced ? noticingLostLeases(store, lost) : store,
    trigger: fenced ? (name, payload, opts) => trigger(name, payload, opts).catch(lost) : trigger,
    logger,
    clock: options.clock,
    maxPayloadBytes: options.maxPayloadBytes,
    runLog: options.runLog,
    callStep: options.callStep,
    callbacks: options.callbacks,
    liveUpdates: options.liveUpdates,
    noteLocalWait: () => {
      if (noted || store.durable) return
      noted = true
      logger.info(LOCAL_WAIT_NOTE)
    },
  }
}

/** `store` with every rejection of its methods passed through `lost` first. */
function noticingLostLeases(store: RunStore, lost: (error: unknown) => never): RunStore {
  return new Proxy(store, {
    get(target, key) {
      const value: unknown = Reflect.get(target, key)
      if (typeof value !== 'function') return value
      return (...args: unknown[]) => {
        const result: unknown = value.apply(target, args)
        return result instanceof Promise ? result.catch(lost) : result
      }
    },
  })
}
