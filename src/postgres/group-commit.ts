/**
 * Group commit for the statements every run makes (its creation, taking
 * and giving up its lease, its end, its steps): the first call goes at
 * once; calls made while it is in flight wait for it, then go together as
 * one statement or one transaction. Under load that is one round trip, and
 * one commit, for many runs; alone, a call waits for nothing.
 *
 * A caller is answered once the batch that holds its call has committed,
 * never before. Two calls on the same row (the same `key`) never share a
 * batch: the later one goes in the next, so that each sees the other's
 * effect as it would one after the other.
 */
import { StoreUnavailableError } from '../runtime/errors.ts'
import { isTransient } from './transient.ts'

interface Pending<T, R> {
  item: T
  resolve(result: R): void
  reject(error: unknown): void
}

/** The answer of one item of a batch that failed on its own, while the others of its batch went through. */
export class ItemFailure {
  readonly error: unknown
  constructor(error: unknown) {
    this.error = error
  }
}

export interface GroupCommitOptions<T> {
  /** Names the row an item writes, when two items on one row must not share a batch. */
  key?(item: T): string
  /**
   * The most items one batch holds; the others wait for the next.
   * @default Infinity
   */
  max?: number
}

export class GroupCommit<T, R> {
  readonly #send: (items: T[]) => Promise<(R | ItemFailure)[]>
  readonly #key: ((item: T) => string) | undefined
  readonly #max: number
  #pending: Pending<T, R>[] = []
  #flushing = false

  /** `send` answers each item of a batch, in order; a rejection fails every item of the batch. */
  constructor(send: (items: T[]) => Promise<(R | ItemFailure)[]>, options: GroupCommitOptions<T> = {}) {
    this.#send = send
    this.#key = options.key
    this.#max = options.max ?? Number.POSITIVE_INFINITY
  }

  add(item: T): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.#pending.push({ item, resolve, reject })
      if (!this.#flushing) void this.#flush()
    })
  }

  async #flush(): Promise<void> {
    this.#flushing = true
    while (this.#pending.length > 0) {
      const batch = this.#take()
      try {
        const results = await this.#send(batch.map((pending) => pending.item))
        for (const [i, pending] of batch.entries()) {
          const result = results[i]
          if (result instanceof ItemFailure) pending.reject(result.error)
          else pending.resolve(result)
        }
      } catch (error) {
        for (const pending of batch) pending.reject(error)
      }
    }
    this.#flushing = false
  }

  /**
   * The next batch: the pending calls, up to `max`, but for a second call
   * on a row already in it; the others wait, in order, for the next.
   */
  #take(): Pending<T, R>[] {
    const pending = this.#pending
    const key = this.#key
    if (key === undefined) return pending.splice(0, this.#max)
    const keys = new Set<string>()
    const batch: Pending<T, R>[] = []
    const later: Pending<T, R>[] = []
    for (const call of pending) {
      const k = key(call.item)
      if (batch.length >= this.#max || keys.has(k)) later.push(call)
      else {
        keys.add(k)
        batch.push(call)
      }
    }
    this.#pending = later
    return batch
  }
}

/**
 * Sends `items` together; when that fails and they were more than one,
 * sends each alone, so that each answers for itself (the failed statement
 * wrote nothing). A batch the database failed (its connection dropped, it
 * cannot be reached: transient.ts) is another matter: its statement may
 * have committed, and its calls alone would fail as it did, so the batch
 * fails whole with that error.
 */
export async function togetherOrAlone<T, R>(items: T[], send: (batch: T[]) => Promise<R[]>): Promise<(R | ItemFailure)[]> {
  if (items.length === 1) return send(items)
  try {
    return await send(items)
  } catch (error) {
    if (error instanceof StoreUnavailableError || isTransient(error)) throw error
    return Promise.all(
      items.map((item) =>
        send([item]).then(
          ([result]) => result,
          (error: unknown) => new ItemFailure(error),
        ),
      ),
    )
  }
}
