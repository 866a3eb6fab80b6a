/**
 * Where an insert's eviction of finished runs starts (run-inserts.ts).
 * Evicting takes the runs that finished first, in `finished_seq` order, so
 * each eviction begins where the last one ended, in the index: the rows
 * deleted before it stay in the index until vacuum removes them, and a
 * transaction held open anywhere keeps vacuum from removing any, so an
 * eviction from the first finished run would step over every run evicted
 * since that transaction began, once per insert.
 *
 * A run can finish out of `finished_seq` order (its transaction took its
 * number, and committed after later ones): the floor stays `MARGIN`
 * numbers behind the last eviction, and once a minute the eviction starts
 * from the first run again, for one that finished further behind. Each
 * process keeps its own floor.
 */
const MARGIN = 100n
const RESTART_MS = 60_000

export class EvictionFloor {
  #reached = 0n
  #since = Date.now()

  /** The `finished_seq` after which the next eviction looks, as text. */
  get from(): string {
    if (Date.now() - this.#since >= RESTART_MS) {
      this.#reached = 0n
      this.#since = Date.now()
    }
    return String(this.#reached > MARGIN ? this.#reached - MARGIN : 0n)
  }

  /** Notes the last `finished_seq` an eviction deleted (text, or null when it deleted none). */
  reached(seq: string | null | undefined): void {
    if (seq != null && BigInt(seq) > this.#reached) this.#reached = BigInt(seq)
  }
}
