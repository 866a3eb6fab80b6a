/**
 * Signals: messages sent into a running run (`sendSignal`,
 * `ctx.step.waitForSignal`, `ctx.signals`; docs/tasks.md "Signals").
 */
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
