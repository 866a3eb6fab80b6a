/**
 * `ctx.step`: durable steps.
 *
 * Every call is keyed. A key with a recorded result returns it without
 * running anything (replay); otherwise the step runs, or, for waits, the run
 * suspends with a waitpoint and the runtime re-dispatches it once the
 * waitpoint is met, after recording the step. A key is used once per
 * invocation, and it is what lines a recorded output up with the call that
 * replays it (docs/tasks.md "Durable steps").
 *
 * Each record keeps the kind of call that wrote it, so a replay that meets a
 * key through another kind of call (the code changed under a suspended run)
 * fails with `StepMismatchError` instead of handing one step's output to
 * another, and a replay that returns without meeting every recorded key is
 * reported (`reportUnreachedSteps`, invocation.ts).
 */
import type {
  ChildRunResult,
  EnqueueOptions,
  StepApi,
  StepKind,
  StepInfo,
  StepRunOptions,
  StepRecord,
  WaitForEventOptions,
  Waitpoint,
} from '../../types.ts'
import { PatchRemovedError, TransactionUnsupportedError } from '../../errors.ts'
import { beginEventWait, eventResult } from './wait-for-event.ts'
import { beginSignalWait, signalResult } from './signal-waits.ts'
import { stepIdempotencyKey } from '../base/ids.ts'
import { checkEnqueueOptions } from '../definitions/options.ts'
import { assertPayload } from '../store/payload-limit.ts'
import { describe } from '../../describe.ts'
import type { TokenRecord } from '../store/store.ts'
import { createCallback } from './callbacks.ts'
import { beginTokenWait, tokenResult } from './token-waits.ts'
import { instantMs } from '../base/clock.ts'
import { childOptions, childRunResult } from './child-waits.ts'
import { SuspendSignal } from './suspend.ts'
import { WAITPOINT_KINDS } from './waitpoint-kinds.ts'
import type { Invocation } from './invocation.ts'
import { noteCompensation, undoOf } from './compensations.ts'
import { begin, record, recordedCount, runStep, type StepHost, stepTiming, stored } from './step-records.ts'

export { type StepHost, stepTiming } from './step-records.ts'

/** The step kind a waitpoint stands for: the kind its step is recorded with once the wait is met. */
export function waitedStepKind(waitpoint: Waitpoint): StepKind {
  return WAITPOINT_KINDS[waitpoint.type].step
}

export function createStepApi(inv: Invocation, host: StepHost): StepApi {
  const api: StepApi = {
    async run<T>(key: string, fn: (step: StepInfo) => T | Promise<T>, opts?: StepRunOptions<T>): Promise<T> {
      const recorded = begin(inv, key, 'run', 'run')
      const undo = undoOf(key, opts)
      if (recorded) {
        if (undo) noteCompensation(inv, key, recorded.output, undo)
        return recorded.output as T
      }
      if (typeof fn !== 'function') {
        throw new TypeError(`ctx.step.run("${key}", fn): fn must be a function (got ${describe(fn)})`)
      }
      const began = host.clock.now()
      const info: StepInfo = { key, attempt: inv.attempt, idempotencyKey: stepIdempotencyKey(inv.runId, key) }
      const output = await runStep(inv, key, 'run', () => fn(info))
      assertPayload(
        output,
        host.maxPayloadBytes,
        `ctx.step.run("${key}") returned a value that cannot be stored as JSON`,
        `ctx.step.run("${key}") returned`,
      )
      const step = output === undefined ? { status: 'completed' as const } : { status: 'completed' as const, output }
      await record(inv, host, key, 'run', undo ? { ...step, compensable: true } : step, began)
      if (undo) noteCompensation(inv, key, output, undo)
      return output
    },

    async transaction<T, Tx>(key: string, fn: (tx: Tx, step: StepInfo) => T | Promise<T>): Promise<Awaited<T>> {
      const recorded = begin(inv, key, 'transaction', 'transaction')
      if (recorded) return recorded.output as Awaited<T>
      if (typeof fn !== 'function') {
        throw new TypeError(`ctx.step.transaction("${key}", fn): fn must be a function (got ${describe(fn)})`)
      }
      const store = host.store
      if (store.transactStep === undefined) throw new TransactionUnsupportedError(key, store.constructor?.name ?? 'a store')
      const began = host.clock.now()
      const step: StepInfo = { key, attempt: inv.attempt, idempotencyKey: stepIdempotencyKey(inv.runId, key) }
      // The record is built inside the transaction: an output that cannot be
      // stored, or an attempt that ended meanwhile, rolls the writes back.
      const toRecord = (output: Awaited<T>): StepRecord => {
        if (inv.closed !== undefined) {
          throw new Error(
            `Step "${key}" finished after attempt ${inv.attempt} of task "${inv.taskName}" ${inv.closed}; its transaction was rolled back`,
          )
        }
        assertPayload(
          output,
          host.maxPayloadBytes,
          `ctx.step.transaction("${key}") returned a value that cannot be stored as JSON`,
          `ctx.step.transaction("${key}") returned`,
        )
        const ended = { status: 'completed', kind: 'transaction', ...stepTiming(began, host.clock.now()) } as const
        return output === undefined ? ended : { ...ended, output }
      }
      return runStep(inv, key, 'transaction', () =>
        stored(
          inv,
          store.transactStep!(inv.runId, key, (tx) => fn(tx as Tx, step) as Awaited<T> | Promise<Awaited<T>>, toRecord),
        ),
      )
    },

    async enqueue(key: string, task: string, payload?: unknown, opts?: EnqueueOptions) {
      const recorded = begin(inv, key, 'enqueue', 'enqueue')
      if (recorded) return recorded.output as { runId: string }
      checkEnqueueOptions(opts, `ctx.step.enqueue("${key}")`)
      const began = host.clock.now()
      const child = await stored(inv, host.trigger(task, payload, childOptions(inv, key, opts, 'enqueue')))
      const output = { runId: child.id }
      await record(inv, host, key, 'enqueue', { status: 'completed', output }, began)
      return output
    },

    // The result is what the child's handler returned, kept as JSON; its
    // type is the caller's, by task name (`ChildRunResult<never>` fits any).
    async waitForTask(key: string, task: string, payload?: unknown, opts?: EnqueueOptions): Promise<ChildRunResult<never>> {
      const recorded = begin(inv, key, 'waitForTask', 'waitForTask')
      if (recorded) return recorded.output as ChildRunResult<never>
      // The child keeps its idempotency key across replays, so a replay finds
      // the child it started instead of starting another.
      checkEnqueueOptions(opts, `ctx.step.waitForTask("${key}")`)
      const began = host.clock.now()
      const child = await stored(inv, host.trigger(task, payload, childOptions(inv, key, opts, 'child')))
      if (child.status === 'completed' || child.status === 'failed' || child.status === 'compensation_failed') {
        const output = childRunResult(child)
        await record(inv, host, key, 'waitForTask', { status: 'completed', output }, began)
        return output as ChildRunResult<never>
      }
      suspend(inv, host, key, { type: 'task', task, runId: child.id })
    },

    async sleep(key, seconds) {
      const recorded = begin(inv, key, 'sleep', 'sleep')
      if (recorded) return
      if (typeof seconds !== 'number' || !Number.isFinite(seconds) || seconds < 0) {
        throw new TypeError(`ctx.step.sleep("${key}", seconds): seconds must be a finite number, 0 or more (got ${describe(seconds)})`)
      }
      await sleepTo(inv, host, key, host.clock.now() + seconds * 1000)
    },

    async sleepUntil(key, date) {
      const recorded = begin(inv, key, 'sleepUntil', 'sleep')
      if (recorded) return
      await sleepTo(inv, host, key, parseInstant(key, date))
    },

    waitForToken<T = unknown>(key: string, opts?: { timeoutSeconds?: number }) {
      return waitToken<T>(inv, host, key, opts, false)
    },

    createCallback(key, opts) {
      const putToken = (token: TokenRecord) => stored(inv, host.store.putToken(token))
      const waitForToken = <T>(key: string) => waitToken<T>(inv, host, key, undefined, true)
      const call = { runId: inv.runId, now: host.clock.now(), putToken, signer: host.callbacks, waitForToken }
      return createCallback(call, key, opts)
    },

    // The result is the recorded event, kept as JSON; its data's type is the caller's.
    async waitForEvent<T = unknown>(key: string, name: string, opts?: WaitForEventOptions) {
      const recorded = begin(inv, key, 'waitForEvent', 'waitForEvent')
      const meet = (now: number) => beginEventWait(host.store, inv.runId, key, name, opts, now)
      return eventResult<T>(recorded ?? (await settledWait(inv, host, key, 'waitForEvent', meet)))
    },

    async waitForSignal<T = unknown>(key: string, name: string, opts?: { timeoutSeconds?: number }) {
      const recorded = begin(inv, key, 'waitForSignal', 'waitForSignal')
      const meet = (now: number) => beginSignalWait(host.store, inv.runId, key, name, opts, now)
      return signalResult<T>(recorded ?? (await settledWait(inv, host, key, 'waitForSignal', meet)))
    },
  }
  return afterUpdatesReplay(inv, api)
}

/**
 * `api` whose calls, while a handler just declared with `ctx.onUpdate` is
 * given the updates it answered before (run-updates.ts), go on once that
 * is done: what the handler rebuilds in memory is there before the run's
 * next step. A field read per call otherwise.
 */
function afterUpdatesReplay(inv: Invocation, api: StepApi): StepApi {
  const waiting = {} as Record<string, unknown>
  for (const [name, call] of Object.entries(api) as [string, (...args: unknown[]) => Promise<unknown>][]) {
    waiting[name] = (...args: unknown[]) => {
      const replay = inv.updatesReplay
      return replay === undefined || inv.updateHandlers > 0 ? call(...args) : replay.then(() => call(...args))
    }
  }
  return waiting as unknown as StepApi
}

/**
 * `ctx.patched(id)` (`deprecated`: `ctx.deprecatePatch(id)`), docs/tasks.md
 * "Changing a task under running runs". Whether this run takes the new
 * branch of patch `id`, recorded as a step (`patch:<id>`) so the answer never
 * changes within the run: a recorded answer comes back; otherwise the run
 * is new here when the invocation has met every step its run recorded
 * (true), and passed this point before the patch existed when recorded
 * steps are still ahead of it (false). `deprecatePatch` fails the attempt
 * with `PatchRemovedError` where the answer is false.
 */
export async function patched(inv: Invocation, host: StepHost, id: string, deprecated = false): Promise<boolean> {
  const call = deprecated ? 'deprecatePatch' : 'patched'
  if (typeof id !== 'string' || id === '') throw new TypeError(`ctx.${call}(id): id must be a non-empty string (got ${describe(id)})`)
  const key = patchKey(id)
  let answer = inv.patches?.get(id)
  if (answer === undefined) {
    const recorded = begin(inv, key, call, 'patch')
    if (recorded) answer = recorded.output === true
    else {
      // Steps the run recorded that this invocation has not met yet lie ahead:
      // the run went past this point on code without the patch.
      answer = inv.met >= recordedCount(inv)
      await record(inv, host, key, 'patch', { status: 'completed', output: answer }, host.clock.now())
    }
    ;(inv.patches ??= new Map()).set(id, answer)
  }
  if (deprecated && !answer) throw (inv.mismatch ??= new PatchRemovedError(id, key))
  return answer
}

/** The step key a patch's answer is recorded under. */
export function patchKey(id: string): string {
  return `patch:${id}`
}

async function sleepTo(inv: Invocation, host: StepHost, key: string, until: number): Promise<void> {
  // Woken from this sleep to answer updates: it ends when it would have.
  const woken = inv.woken
  if (woken?.stepKey === key && woken.until !== undefined) until = Date.parse(woken.until)
  // A wait that is already met does not suspend (only an unmet wait does).
  const now = host.clock.now()
  if (until <= now) return record(inv, host, key, 'sleep', { status: 'completed' }, now)
  suspend(inv, host, key, { type: 'sleep', until: new Date(until).toISOString() })
}

/** A wait on a token (a token's, an event's, a signal's): its step, recorded once met, or the run suspended on it. */
async function settledWait(
  inv: Invocation,
  host: StepHost,
  key: string,
  kind: 'waitForToken' | 'waitForEvent' | 'waitForSignal',
  meet: (now: number) => Promise<{ step: StepRecord } | { waitpoint: Waitpoint }>,
): Promise<StepRecord> {
  const began = host.clock.now()
  const wait = await stored(inv, meet(began))
  if ('waitpoint' in wait) suspend(inv, host, key, wait.waitpoint)
  await record(inv, host, key, kind, wait.step, began)
  return wait.step
}

function suspend(inv: Invocation, host: StepHost, key: string, waitpoint: Waitpoint): never {
  host.noteLocalWait()
  inv.suspension ??= new SuspendSignal(key, waitpoint)
  throw inv.suspension
}

/** `ctx.step.waitForToken`, and the wait of a callback (`callback`: its waitpoint says so, for those who show it). */
async function waitToken<T>(
  inv: Invocation,
  host: StepHost,
  key: string,
  opts: { timeoutSeconds?: number } | undefined,
  callback: boolean,
): Promise<{ payload?: T } | { timedOut: true }> {
  const recorded = begin(inv, key, 'waitForToken', 'waitForToken')
  const meet = (now: number) => beginTokenWait(host.store, inv.runId, key, opts, now, callback)
  return tokenResult<T>(recorded ?? (await settledWait(inv, host, key, 'waitForToken', meet)))
}

function parseInstant(key: string, date: Date | string): number {
  const ms = instantMs(date)
  if (Number.isNaN(ms)) {
    throw new TypeError(`ctx.step.sleepUntil("${key}", date): date must be a valid Date or an ISO 8601 string (got ${describe(date)})`)
  }
  return ms
}
