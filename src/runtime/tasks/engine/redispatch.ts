/**
 * Runs whose attempt the store could not serve (an interrupted attempt,
 * `dispatch.ts`), dispatched again later: the run is read after
 * `FIRST_WAIT_MS`, then twice as long each time the store still cannot
 * answer, up to `LAST_WAIT_MS`, and dispatched while it is still
 * `running` and nothing else dispatched it meanwhile. One timer a run.
 */
import type { Logger, RunRecord } from '../../types.ts'
import { StoreUnavailableError, errorMessage } from '../../errors.ts'
import { setTimer } from '../base/in-process-timers.ts'
import type { RunStore } from '../store/store.ts'

export const FIRST_WAIT_MS = 250
export const LAST_WAIT_MS = 5000

export interface RedispatchOptions {
  store: RunStore
  logger: Logger
  unref: boolean
  /** Whether a dispatch of the run is in flight here already. */
  busy(runId: string): boolean
  /** Dispatches the run, as read then. */
  start(run: RunRecord): void
}

export class Redispatch {
  readonly #options: RedispatchOptions
  readonly #timers = new Map<string, ReturnType<typeof setTimeout>>()
  #closed = false

  constructor(options: RedispatchOptions) {
    this.#options = options
  }

  /** Dispatches run `runId` again once the store can read it (the file's comment). */
  later(runId: string, taskName: string, waitMs = FIRST_WAIT_MS): void {
    if (this.#closed || this.#timers.has(runId)) return
    const { store, logger, unref, busy, start } = this.#options
    const timer = setTimer(
      () => {
        this.#timers.delete(runId)
        if (this.#closed || busy(runId)) return
        store.getRun(runId).then(
          (run) => {
            if (run?.status === 'running') start(run)
          },
          (error: unknown) => {
            if (!(error instanceof StoreUnavailableError)) {
              logger.error(`[svc] task "${taskName}": run ${runId} could not be dispatched again: ${errorMessage(error)}`)
            }
            this.later(runId, taskName, Math.min(LAST_WAIT_MS, waitMs * 2))
          },
        )
      },
      waitMs,
      unref,
    )
    this.#timers.set(runId, timer)
  }

  /** Dispatches nothing more. */
  close(): void {
    this.#closed = true
    for (const timer of this.#timers.values()) clearTimeout(timer)
    this.#timers.clear()
  }
}
