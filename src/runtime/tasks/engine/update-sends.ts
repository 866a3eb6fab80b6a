/**
 * `updateRun`: a message into a running run that waits for its answer
 * (docs/tasks.md "Updates"). The update is checked, kept with its run
 * (once per id), and the run is reached: its invocation live in this
 * process is told at once (`LiveUpdates.poke`); a run suspended on a wait
 * is woken from it (`wakeForUpdates`), replays to the same wait, answers,
 * and waits there again; a run busy in another process answers when it
 * next waits or ends (steps/run-updates.ts). The caller then waits for
 * the answer kept with the update, told of it here or reading the store,
 * up to its timeout. Edge-safe.
 */
import type { RunRecord, UpdateRecord, UpdateRunOptions } from '../../types.ts'
import { RunNotFoundError, RunFinishedError } from '../../errors.ts'
import { TooManyUpdatesError, UpdateTimeoutError, updateAnswerError } from '../../update-errors.ts'
import { describe } from '../../describe.ts'
import { updateProblem } from '../../events/rules.ts'
import { type Clock, isoNowOf } from '../base/clock.ts'
import { assertPayload } from '../store/payload-limit.ts'
import { MAX_PENDING_UPDATES } from '../store/update-records.ts'
import { isFinished, type RunStore } from '../store/store.ts'
import type { LiveUpdates } from '../steps/live-updates.ts'

/** How long `updateRun` waits for an answer unless told (seconds). */
export const DEFAULT_UPDATE_TIMEOUT_SECONDS = 30
/** The longest it waits: an HTTP request is held that long at most. */
export const MAX_UPDATE_TIMEOUT_SECONDS = 300
/** The longest pause between two looks at the store for an answer given in another process (ms). */
const MAX_LOOK_INTERVAL_MS = 250

export interface UpdateSendParts {
  store: RunStore
  clock: Clock
  live: LiveUpdates
  /** The largest update data, in bytes of UTF-8 JSON (`maxPayloadBytes`). */
  maxPayloadBytes: number
  /** The status a run of this task takes when it may go on (`queued` under flow control). */
  startStatus(taskName: string): 'running' | 'queued'
  /** Starts an invocation of a run now `running`, or looks for a slot for one now `queued`. */
  dispatch(run: RunRecord): void
}

export async function updateRun(
  parts: UpdateSendParts,
  runId: string,
  name: string,
  data: unknown,
  options: UpdateRunOptions | undefined,
): Promise<unknown> {
  const call = `updateRun(${describe(runId)}, ${describe(name)})`
  const problem = updateRunProblem(runId, name, options)
  if (problem) throw new TypeError(`${call}: ${problem}`)
  assertPayload(data, parts.maxPayloadBytes, `${call}: the data cannot be stored as JSON`, `The data of update "${name}" is`)
  const { store } = parts
  if (!store.putUpdate || !store.answerUpdate || !store.getUpdate || !store.listUpdates) {
    throw new Error(`${call}: this run store keeps no updates (it lacks putUpdate, answerUpdate, getUpdate and listUpdates)`)
  }
  const run = await store.getRun(runId)
  if (!run) throw new RunNotFoundError(runId)
  const update: UpdateRecord = { id: options?.id ?? crypto.randomUUID(), runId, name, sentAt: isoNowOf(parts.clock), status: 'pending' }
  if (data !== undefined) update.data = data
  // A finished run is refused only for a new id: a request again for an answered update gets its answer.
  const known = options?.id === undefined ? undefined : await store.getUpdate(runId, update.id)
  if (!known && isFinished(run.status)) throw new RunFinishedError(runId, run.status, 'updated')
  const put = known ? { update: known } : await store.putUpdate(update, MAX_PENDING_UPDATES)
  if (put === 'full') throw new TooManyUpdatesError(runId, MAX_PENDING_UPDATES)
  const seconds = options?.timeoutSeconds ?? DEFAULT_UPDATE_TIMEOUT_SECONDS
  const answered = put.update.status === 'pending' ? await awaitAnswer(parts, put.update, seconds) : put.update
  const error = updateAnswerError(answered)
  if (error) throw error
  return answered.result
}

/**
 * A timeout given as text (`?timeout=`, `svc runs update --timeout`): plain
 * decimal seconds above 0 and at most `MAX_UPDATE_TIMEOUT_SECONDS`, else
 * `undefined` (`Number()` alone would take '0x10', ' 5' or '1e2').
 */
export function timeoutSecondsOf(text: string): number | undefined {
  const seconds = /^\d+(?:\.\d+)?$/.test(text) ? Number(text) : Number.NaN
  return seconds > 0 && seconds <= MAX_UPDATE_TIMEOUT_SECONDS ? seconds : undefined
}

/** Why `updateRun(runId, name, data, options)` cannot send: its run id's, options', name's, id's or timeout's problem; `null` when none. */
export function updateRunProblem(runId: unknown, name: unknown, options: unknown): string | null {
  if (typeof runId !== 'string' || runId === '') return `runId must be a run's id (got ${describe(runId)})`
  if (options !== undefined && (options === null || typeof options !== 'object')) {
    return `options must be an object such as { id, timeoutSeconds } (got ${describe(options)})`
  }
  const opts = options as UpdateRunOptions | undefined
  return updateProblem(name, opts?.id) ?? timeoutProblem(opts?.timeoutSeconds)
}

function timeoutProblem(seconds: unknown): string | null {
  if (seconds === undefined) return null
  if (typeof seconds === 'number' && Number.isFinite(seconds) && seconds > 0 && seconds <= MAX_UPDATE_TIMEOUT_SECONDS) return null
  return `timeoutSeconds must be a number of seconds above 0 and at most ${MAX_UPDATE_TIMEOUT_SECONDS} (got ${describe(seconds)})`
}

/**
 * Reaches the run and waits for the update's answer: told of it when it is
 * answered here, else looking at the store at growing intervals; a run
 * found suspended with the update still pending is woken again (it waited
 * again before the update was kept), and a run found finished refuses it.
 */
async function awaitAnswer(parts: UpdateSendParts, update: UpdateRecord, seconds: number): Promise<UpdateRecord> {
  const { store, clock, live } = parts
  const { runId, id } = update
  const endsAt = clock.now() + seconds * 1000
  let wake: (() => void) | undefined
  const stop = live.onAnswer(runId, id, () => wake?.())
  try {
    if (!live.poke(runId)) await wakeForUpdates(parts, runId)
    for (let interval = 5; ; interval = Math.min(interval * 2, MAX_LOOK_INTERVAL_MS)) {
      const left = endsAt - clock.now()
      if (left > 0) {
        await new Promise<void>((resolve) => {
          const timer = clock.setTimer(() => resolve(), Math.min(interval, left), true)
          wake = () => {
            clock.clearTimer(timer)
            resolve()
          }
        })
        wake = undefined
      }
      const now = await store.getUpdate!(runId, id)
      if (!now) throw new RunNotFoundError(runId)
      if (now.status !== 'pending') return now
      const run = await store.getRun(runId)
      if (!run) throw new RunNotFoundError(runId)
      if (isFinished(run.status)) {
        const message = `Run "${runId}" finished (${run.status}) before it answered update "${update.name}" (${id})`
        const error = { code: 'RUN_FINISHED', message, runStatus: run.status }
        const refused = await store.answerUpdate!(runId, id, { status: 'rejected', error, answeredAt: isoNowOf(clock) })
        if (refused && refused.status !== 'pending') return refused
      }
      if (endsAt - clock.now() <= 0) throw new UpdateTimeoutError(runId, id, update.name, seconds)
      if (run.status === 'suspended') await wakeForUpdates(parts, runId)
      else live.poke(runId)
    }
  } finally {
    stop()
  }
}

/**
 * Wakes run `runId` from its wait to answer updates, if it is suspended:
 * it goes on as when a wait is met, without one being met, and keeps the
 * wait it left (`RunRecord.wokenForUpdates`), a sleep's end included. A
 * compare-and-set on `suspended`, so a wake that a resume or another wake
 * beat changes nothing.
 */
export async function wakeForUpdates(parts: Pick<UpdateSendParts, 'store' | 'startStatus' | 'dispatch'>, runId: string): Promise<boolean> {
  const run = await parts.store.getRun(runId)
  if (run?.status !== 'suspended' || !run.suspended) return false
  const { stepKey, waitpoint } = run.suspended
  const wokenForUpdates = waitpoint.type === 'sleep' ? { stepKey, until: waitpoint.until } : { stepKey }
  const status = parts.startStatus(run.taskName)
  const woken = await parts.store.updateRun(runId, { status, suspended: undefined, wokenForUpdates }, { status: 'suspended' })
  if (!woken) return false
  parts.dispatch(woken)
  return true
}
