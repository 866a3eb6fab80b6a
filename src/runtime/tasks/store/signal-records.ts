/**
 * What every store does the same with a signal (types/signals.ts): the
 * bound on the signals a run holds that no wait took, and the part of a
 * kept signal that a wait resolves with. Edge-safe.
 */
import type { ReceivedSignal, SignalRecord } from '../../types/signals.ts'

/** The most signals a run holds that no wait took; a send past it is refused (429). */
export const MAX_WAITING_SIGNALS = 1000

/** The signal as `waitForSignal` resolves with it, and its wait's token holds it. */
export function receivedSignal(signal: SignalRecord): ReceivedSignal {
  const received: ReceivedSignal = { id: signal.id, name: signal.name, sentAt: signal.sentAt }
  if (signal.data !== undefined) received.data = signal.data
  return received
}
