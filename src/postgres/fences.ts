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
  /** Runs whose attempt's end gave their lease up in its own statement (run-updates.ts), by the owner that held it. */
  readonly #givenUp = new Map<string, string>()
  /** Leases being taken (`acquiring`), by owner and run, with how many calls take each. */
  readonly #acquiring = new Map<string, number>()

  /** The fence of the lease held here on `runId`, if any. */
  of(runId: string): Fence | undefined {
    return this.#held.get(runId)
  }

  /**
   * A claim by `owner` set the fence of `runId`. Claims of one run by this
   * process can answer out of order (a sweep's and a dispatch's, on two
   * connections); the later claim is the one with the greater fence, which
   * an earlier answer coming last does not take back.
   */
  claimed(owner: string, runId: string, fence: string): void {
    const held = this.#held.get(runId)
    if (held?.owner === owner && BigInt(held.fence) > BigInt(fence)) return
    this.#held.set(runId, { owner, fence })
  }

  /**
   * `owner` is taking the lease on `runId` (`acquireLease`): until the
   * claim answers, the run counts as held here (`runIds`), so that this
   * process's own sweep does not take it as an orphan meanwhile.
   */
  acquiring(owner: string, runId: string): () => void {
    const key = `${owner}\n${runId}`
    this.#acquiring.set(key, (this.#acquiring.get(key) ?? 0) + 1)
    return () => {
      const left = (this.#acquiring.get(key) ?? 1) - 1
      if (left > 0) this.#acquiring.set(key, left)
      else this.#acquiring.delete(key)
    }
  }

  /**
   * `owner` gave up these runs (all of its runs when omitted), or failed to
   * take them. Answers the runs whose lease is still to be given up in the
   * database: not those whose end gave it up already (`endReleased`).
   */
  released(owner: string, runIds?: readonly string[]): string[] | undefined {
    if (runIds === undefined) {
      for (const [runId, held] of this.#held) if (held.owner === owner) this.#held.delete(runId)
      for (const [runId, by] of this.#givenUp) if (by === owner) this.#givenUp.delete(runId)
      return undefined
    }
    const left: string[] = []
    for (const runId of runIds) {
      if (this.#held.get(runId)?.owner === owner) this.#held.delete(runId)
      if (this.#givenUp.get(runId) === owner) this.#givenUp.delete(runId)
      else left.push(runId)
    }
    return left
  }

  /**
   * The end of the attempt on `runId` finished the run and gave its lease
   * up in the same statement (run-updates.ts). From there the run is not
   * held here, as after a release: what this process writes for it is no
   * attempt's. (A finished run is never claimed again, so its fence could
   * not move on anyway.) The release that follows the end has nothing left
   * to write.
   */
  endReleased(runId: string): void {
    const held = this.#held.get(runId)
    if (held === undefined) return
    this.#held.delete(runId)
    this.#givenUp.set(runId, held.owner)
  }

  /** Whether the end of the attempt on `runId` gave its lease up (`endReleased`), and its release has not come yet. */
  endedHere(runId: string): boolean {
    return this.#givenUp.has(runId)
  }

  /** The runs `owner` holds here, or is taking the lease on. */
  runIds(owner: string): string[] {
    const ids: string[] = []
    for (const [runId, held] of this.#held) if (held.owner === owner) ids.push(runId)
    for (const key of this.#acquiring.keys()) {
      const [by, runId] = key.split('\n')
      if (by === owner && !this.#held.has(runId)) ids.push(runId)
    }
    return ids
  }
}
