/**
 * Group commit for the statements every run makes (taking and giving up its
 * lease): the first call goes at once; calls made while it is in flight
 * wait for it, then go together as one statement. Under load that is one
 * round trip, and one transaction, for many runs; alone, a call waits for
 * nothing.
 */
interface Pending<T, R> {
  item: T
  resolve(result: R): void
  reject(error: unknown): void
}

export class GroupCommit<T, R> {
  readonly #send: (items: T[]) => Promise<R[]>
  #pending: Pending<T, R>[] = []
  #flushing = false

  /** `send` answers each item of a batch, in order. */
  constructor(send: (items: T[]) => Promise<R[]>) {
    this.#send = send
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
      const batch = this.#pending
      this.#pending = []
      try {
        const results = await this.#send(batch.map((pending) => pending.item))
        for (const [i, pending] of batch.entries()) pending.resolve(results[i])
      } catch (error) {
        for (const pending of batch) pending.reject(error)
      }
    }
    this.#flushing = false
  }
}
