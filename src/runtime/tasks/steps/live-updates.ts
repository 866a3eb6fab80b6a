/**
 * The runs whose invocation in this process answers updates now
 * (run-updates.ts), and the callers of `updateRun` here waiting for an
 * answer: an update sent to a run live here is answered at once, and its
 * caller hears of the answer without asking the store again. Callers in
 * other processes, or of runs live elsewhere, ask the store
 * (engine/update-sends.ts). Edge-safe.
 */

/** What an invocation that answers updates is told: an update arrived for its run. */
export interface UpdateListener {
  poke(): void
}

export class LiveUpdates {
  readonly #runs = new Map<string, UpdateListener>()
  readonly #waiters = new Map<string, Set<() => void>>()

  /** `listener` answers the updates of run `runId` from now on, until `leave`. */
  join(runId: string, listener: UpdateListener): void {
    this.#runs.set(runId, listener)
  }

  leave(runId: string, listener: UpdateListener): void {
    if (this.#runs.get(runId) === listener) this.#runs.delete(runId)
  }

  /** Tells the invocation of run `runId` live here, if any, that an update arrived; resolves to whether one was. */
  poke(runId: string): boolean {
    const listener = this.#runs.get(runId)
    listener?.poke()
    return listener !== undefined
  }

  /** Calls `wake` once update `id` of run `runId` is answered here; returns what stops listening. */
  onAnswer(runId: string, id: string, wake: () => void): () => void {
    const key = `${runId}\n${id}`
    let waiters = this.#waiters.get(key)
    if (!waiters) this.#waiters.set(key, (waiters = new Set()))
    waiters.add(wake)
    return () => {
      waiters.delete(wake)
      if (waiters.size === 0 && this.#waiters.get(key) === waiters) this.#waiters.delete(key)
    }
  }

  /** Update `id` of run `runId` was answered here. */
  answered(runId: string, id: string): void {
    const waiters = this.#waiters.get(`${runId}\n${id}`)
    if (waiters) for (const wake of [...waiters]) wake()
  }
}
