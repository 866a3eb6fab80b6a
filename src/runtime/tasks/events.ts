/**
 * The run changes one engine makes, for whoever listens in this process:
 * `TaskRuntime.onRunChange`, and through it the admin surface's event
 * stream (`GET /__tasks/events`). A change made by another process on a
 * shared store is not seen here. Edge-safe: no `node:` import.
 */
import type { Logger, RunChange, RunRecord } from '../types.ts'
import { errorMessage } from '../errors.ts'

interface Subscriber {
  change(change: RunChange): void
  end?(): void
}

export class RunChanges {
  readonly #logger: Logger
  readonly #subscribers = new Set<Subscriber>()
  #ended = false

  constructor(logger: Logger) {
    this.#logger = logger
  }

  /**
   * Calls `change` for every later change, and `end` once when the engine
   * drains or closes (at once if it already has). Returns the way to stop.
   */
  subscribe(change: (change: RunChange) => void, end?: () => void): () => void {
    if (this.#ended) {
      end?.()
      return () => {}
    }
    const subscriber: Subscriber = { change, end }
    this.#subscribers.add(subscriber)
    return () => {
      this.#subscribers.delete(subscriber)
    }
  }

  /** Tells every subscriber that `run` is now in its status. A subscriber that throws is logged; the others still hear of it. */
  emit(run: RunRecord): void {
    if (this.#subscribers.size === 0) return
    const change: RunChange = { id: run.id, taskName: run.taskName, status: run.status }
    for (const subscriber of this.#subscribers) {
      try {
        subscriber.change(change)
      } catch (error) {
        this.#logger.error(`[svc] task "${run.taskName}": a run change listener failed on run ${run.id}: ${errorMessage(error)}`)
      }
    }
  }

  /** Ends every subscription: the process is on its way out, so open streams must not hold it. */
  end(): void {
    if (this.#ended) return
    this.#ended = true
    const subscribers = [...this.#subscribers]
    this.#subscribers.clear()
    for (const subscriber of subscribers) {
      try {
        subscriber.end?.()
      } catch (error) {
        this.#logger.error(`[svc] task runtime: a run change listener failed to end: ${errorMessage(error)}`)
      }
    }
  }
}
