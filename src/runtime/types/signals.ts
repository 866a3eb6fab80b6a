/**
 * Signals: messages sent into a running run (`sendSignal`,
 * `ctx.step.waitForSignal`, `ctx.signals`; docs/tasks.md "Signals").
 */
import type { TokenRecord } from './tokens.ts'

/** Options of `sendSignal`. */
export interface SendSignalOptions {
  /**
   * The signal's id, unique within its run. Sending an id again is sending
   * the same signal: it is kept once and answered as a duplicate.
   * @default a random UUID
   */
  id?: string
}

/** What `sendSignal` answers. */
export interface SentSignal {
  id: string
  runId: string
  name: string
  /** `true` when a signal with this id had been sent to the run before: nothing more was kept. */
  duplicate: boolean
}

/** The signal a `waitForSignal` resolved with. */
export interface ReceivedSignal<T = unknown> {
  id: string
  name: string
  data?: T
  /** When it was sent (ISO). */
  sentAt: string
}

/** A signal as a store keeps it. */
export interface SignalRecord extends ReceivedSignal {
  runId: string
  /** The token of the wait that took it; absent while none has. */
  takenBy?: string
}

/** The signal calls of a run store (`RunStore.putSignal` and the rest). */
export interface SignalStore {
  /**
   * `putSignal` keeps `signal` unless its run holds one with its id, and
   * resolves to the signal held and whether this call kept it, or to
   * `'full'`, keeping nothing, when the run holds `maxWaiting` signals no
   * wait took; atomic, like `createRun`.
   */
  putSignal(signal: SignalRecord, maxWaiting: number): Promise<{ signal: SignalRecord; kept: boolean } | 'full'>
  /**
   * When token `tokenId` (a `waitForSignal`'s, of kind `'signal'`) is
   * waiting and its run holds a signal named `name` that no wait took,
   * settles the token with the oldest such signal (`completed`, its payload
   * the `ReceivedSignal`) and marks the signal taken by it, in one atomic
   * step; resolves to the token as it ends up (`undefined`: no such token).
   * So a signal is taken by one wait at most, and a timed-out wait takes none.
   */
  takeSignal(tokenId: string, name: string): Promise<TokenRecord | undefined>
  /** The signals run `runId` holds, oldest first. */
  listSignals(runId: string): Promise<SignalRecord[]>
}
