/**
 * `sendSignal`: a message into a running run (docs/tasks.md "Signals").
 * The signal is checked, kept with its run (once per id), and then, if the
 * run is suspended on a wait for its name, that wait takes the oldest
 * signal of the name and the run resumes (signal-waits.ts). A send that
 * meets no wait leaves the signal for the run's next wait of the name.
 * Edge-safe.
 */
import type { SendSignalOptions, SentSignal, SignalRecord } from '../../types/signals.ts'
import { RunFinishedError, RunNotFoundError, TooManySignalsError } from '../../errors.ts'
import { describe } from '../../describe.ts'
import { signalProblem } from '../../events/rules.ts'
import { type Clock, isoNowOf } from '../base/clock.ts'
import { assertPayload } from '../store/payload-limit.ts'
import { MAX_WAITING_SIGNALS } from '../store/signal-records.ts'
import { isFinished, type RunStore } from '../store/store.ts'
import { signalStore } from '../steps/signal-waits.ts'
import type { Waitpoints } from '../steps/waitpoints.ts'

export interface SignalSendParts {
  store: RunStore
  clock: Clock
  waitpoints: Waitpoints
  /** The largest signal data, in bytes of UTF-8 JSON (`maxPayloadBytes`). */
  maxPayloadBytes: number
}

export async function sendSignal(
  parts: SignalSendParts,
  runId: string,
  name: string,
  data: unknown,
  options: SendSignalOptions | undefined,
): Promise<SentSignal> {
  const call = `sendSignal(${describe(runId)}, ${describe(name)})`
  if (typeof runId !== 'string' || runId === '') throw new TypeError(`${call}: runId must be a run's id (got ${describe(runId)})`)
  const problem = signalProblem(name, options?.id)
  if (problem) throw new TypeError(`${call}: ${problem}`)
  // The data becomes the output of the step that takes it.
  assertPayload(data, parts.maxPayloadBytes, `${call}: the data cannot be stored as JSON`, `The data of signal "${name}" is`)
  const { store, waitpoints } = parts
  const signals = signalStore(store, call)
  const run = await store.getRun(runId)
  if (!run) throw new RunNotFoundError(runId)
  if (isFinished(run.status)) throw new RunFinishedError(runId, run.status, 'signalled')
  const signal: SignalRecord = { id: options?.id ?? crypto.randomUUID(), runId, name, sentAt: isoNowOf(parts.clock) }
  if (data !== undefined) signal.data = data
  const put = await signals.putSignal(signal, MAX_WAITING_SIGNALS)
  if (put === 'full') throw new TooManySignalsError(runId, MAX_WAITING_SIGNALS)
  // Read after the signal is kept: a run that suspends later takes it with its own look.
  // A send again of a kept id delivers too, for a send cut off before it did.
  const now = await store.getRun(runId)
  if (now) await waitpoints.deliverSignal(now, name)
  return { id: put.signal.id, runId, name, duplicate: !put.kept }
}
