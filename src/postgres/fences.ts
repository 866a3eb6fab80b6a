/**
 * The fences of the leases this process holds on a shared Postgres store.
 *
 * `runs.lease_fence` counts the claims of a run: taking its lease
 * (`acquireLease`, `claimOrphanedRuns`), making it `running` (the lease
 * with no owner it gets then) and cancelling it each move it on. A claim
 * returns the fence it set, and the store keeps it here, by run, until the
 * lease is given up. The writes an attempt makes for a run held here carry
 * the fence they were made with, in the statement itself (`lease_owner =
 * owner AND lease_fence = fence`): once another claim moved the fence past
 * it, they change nothing and reject with `LeaseLostError`.
 *
 * The fence is read when a write is made, not when it reaches the
 * database: a write sent before a claim moved the fence carries the old
 * one. One store serves one engine (the engine of its process), so a run
 * held here is held by that engine's attempt.
 */

export interface Fence {
  /** The engine that holds the lease. */
  owner: string
  /** `lease_fence` as its claim set it (a bigint, as text). */
  fence: string
}

export class Fences {
  readonly #held = new Map<string, Fence>()

  /** The fence of the lease held here on `runId`, if any. */
  of(runId: string): Fence | undefined {
    return this.#held.get(runId)
  }

  /** A claim by `owner` set the fence of `runId`. */
  claimed(owner: string, runId: string, fence: string): void {
    this.#held.set(runId, { owner, fence })
  }

  /** `owner` gave up these runs (all of its runs when omitted), or failed to take them. */
  released(owner: string, runIds?: readonly string[]): void {
    if (runIds === undefined) {
      for (const [runId, held] of this.#held) if (held.owner === owner) this.#held.delete(runId)
      return
    }
    for (const runId of runIds) if (this.#held.get(runId)?.owner === owner) this.#held.delete(runId)
  }

  /** The runs `owner` holds here. */
  runIds(owner: string): string[] {
    const ids: string[] = []
    for (const [runId, held] of this.#held) if (held.owner === owner) ids.push(runId)
    return ids
  }
}
