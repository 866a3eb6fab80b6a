/**
 * SIGTERM and SIGINT drain the server, then end the process with the same
 * signal: re-raised once the handler is gone, it gives the status a signal
 * gives (128 + n), without `process.exit` in library code.
 */
import type { Logger } from '../types.ts'

const SIGNALS = ['SIGTERM', 'SIGINT'] as const

/** Installs the handlers; the function returned removes them. */
export function drainOnSignals(close: () => Promise<void>, logger: Logger, timeoutMs: number): () => void {
  function onSignal(signal: NodeJS.Signals): void {
    logger.info(`[svc] ${signal}: draining (up to ${timeoutMs} ms)`)
    // Holds the event loop open until the signal is raised again: a runtime
    // whose loop empties once the server has closed (Deno) could otherwise
    // exit with 0 first. Let go a moment after the signal, should something
    // else have taken it.
    const hold = setInterval(() => {}, 1000)
    close()
      .catch((error) => logger.error('[svc] shutdown failed:', error))
      .finally(() => {
        process.kill(process.pid, signal)
        setTimeout(() => clearInterval(hold), 1000).unref?.()
      })
  }
  for (const signal of SIGNALS) process.once(signal, onSignal)
  return () => {
    for (const signal of SIGNALS) process.off(signal, onSignal)
  }
}
