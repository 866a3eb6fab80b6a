/**
 * Signals into a running run (docs/tasks.md "Signals"): the wait of
 * `ctx.step.waitForSignal`, and the delivery of a signal sent to a run that
 * waits for it.
 *
 * The wait is a token of kind `'signal'`, made once per run and step (a
 * replay finds the same one), and a signal meets it through the store's
 * `takeSignal`, which settles the token with the oldest signal of its name
 * that no wait took, in one atomic step. So each signal goes to one wait,
 * in the order the signals were sent, and a wait that timed out (its token
 * settled `timed_out`) takes none: the signal stays for the next wait.
 *
 * A signal is never lost between a send and a wait: the send keeps the
 * signal before it looks for a wait, and a wait takes once before it
 * suspends and again once its waitpoint is armed (`Waitpoints.armWaitpoint`),
 * so whichever comes second finds the other. Edge-safe.
 */
import type { ReceivedSignal, RunRecord, StepRecord, Waitpoint } from '../../types.ts'
import { describe } from '../../describe.ts'
import { signalNameProblem } from '../../events/rules.ts'
import type { RunStore, TokenRecord } from '../store/store.ts'
import { settledStep } from './token-waits.ts'

export type SignalWaitpoint = Extract<Waitpoint, { type: 'signal' }>

/** The token id of run `runId`'s wait for a signal at step `stepKey`; distinct from the other waits' tokens. */
export function signalWaitTokenId(runId: string, stepKey: string): string {
  return `${runId}:${stepKey}:signal`
}

/** What the step resolves to, from its record. */
export function signalResult<T>(step: StepRecord): ReceivedSignal<T> | { timedOut: true } {
  return step.status === 'timed_out' ? { timedOut: true } : (step.output as ReceivedSignal<T>)
}

/** The store's signal calls, or an error naming what it lacks. */
export function signalStore(store: RunStore, where: string): Required<Pick<RunStore, 'putSignal' | 'takeSignal' | 'listSignals'>> {
  const { putSignal, takeSignal, listSignals } = store
  if (!putSignal || !takeSignal || !listSignals) {
    throw new Error(`${where}: this run store keeps no signals (it lacks putSignal, takeSignal and listSignals)`)
  }
  return { putSignal: putSignal.bind(store), takeSignal: takeSignal.bind(store), listSignals: listSignals.bind(store) }
}

/**
 * Begins (or, on a replay, finds again) the wait of run `runId` at
 * `stepKey` for a signal named `name`: resolves to the step to record when
 * a signal was there to take or the token was settled, else to the
 * waitpoint to suspend on. `now` (epoch ms) is when it begins.
 */
export async function beginSignalWait(
  store: RunStore,
  runId: string,
  stepKey: string,
  name: string,
  opts: { timeoutSeconds?: number } | undefined,
  now: number,
): Promise<{ step: StepRecord } | { waitpoint: SignalWaitpoint }> {
  const where = `ctx.step.waitForSignal("${stepKey}", ${describe(name)})`
  const problem = signalNameProblem(name) ?? optionsProblem(opts)
  if (problem) throw new TypeError(`${where}: ${problem}`)
  const signals = signalStore(store, where)
  const timeoutSeconds = opts?.timeoutSeconds
  const made = await store.putToken({
    id: signalWaitTokenId(runId, stepKey),
    runId,
    stepKey,
    status: 'waiting',
    kind: 'signal',
    createdAt: new Date(now).toISOString(),
    ...(timeoutSeconds === undefined ? {} : { timeoutAt: new Date(now + timeoutSeconds * 1000).toISOString() }),
  })
  const token = made.status === 'waiting' ? ((await signals.takeSignal(made.id, name)) ?? made) : made
  if (token.status !== 'waiting') return { step: settledStep(token) }
  const waitpoint: SignalWaitpoint = { type: 'signal', signal: name, tokenId: token.id }
  if (token.timeoutAt !== undefined) waitpoint.timeoutAt = token.timeoutAt
  return { waitpoint }
}

function optionsProblem(opts: { timeoutSeconds?: number } | undefined): string | null {
  if (opts === undefined) return null
  if (opts === null || typeof opts !== 'object') return `options must be an object such as { timeoutSeconds: 60 } (got ${describe(opts)})`
  const { timeoutSeconds } = opts
  if (timeoutSeconds !== undefined && (typeof timeoutSeconds !== 'number' || !Number.isFinite(timeoutSeconds) || timeoutSeconds <= 0)) {
    return `timeoutSeconds must be a positive finite number (got ${describe(timeoutSeconds)})`
  }
  return null
}

/**
 * The delivery of a signal named `name` just kept for `run`: when the run is
 * suspended on a wait for that name, the wait takes the oldest signal of
 * the name (this one, or one sent before it) and `resume` resumes the run
 * with it. Resolves to whether it resumed. A run that waits elsewhere, or
 * still runs, takes the signal with its own look.
 */
export async function deliverSignal(
  store: RunStore,
  run: RunRecord,
  name: string,
  resume: (stepKey: string, token: TokenRecord) => Promise<boolean>,
): Promise<boolean> {
  const wait = run.suspended
  if (run.status !== 'suspended' || wait?.waitpoint.type !== 'signal' || wait.waitpoint.signal !== name) return false
  const token = await store.takeSignal!(wait.waitpoint.tokenId, name)
  if (!token || token.status === 'waiting') return false
  return resume(wait.stepKey, token)
}
