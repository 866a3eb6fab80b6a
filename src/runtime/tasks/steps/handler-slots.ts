/**
 * The cap on the handlers one engine runs at once (`maxConcurrentRuns`):
 * a batch of 10,000 items, or an event that starts 100 tasks' runs,
 * queues its attempts here instead of starting every handler at once.
 * A run waiting for a slot keeps its place in the store (`running`, and
 * leased to this engine on a shared store, its lease renewed); the next
 * free slot goes to the waiting run of the highest priority, then to the
 * one that waited longest. Edge-safe.
 */

/** Handlers one engine runs at once, by default. */
export const DEFAULT_MAX_CONCURRENT_RUNS = 100

interface Waiting {
  priority: number
  seq: number
  start: () => void
}

export class HandlerSlots {
  readonly max: number
  #running = 0
  #seq = 0
  /** A binary heap: the highest priority first, then the lowest `seq`. */
  readonly #waiting: Waiting[] = []

  constructor(max: number) {
    this.max = max
  }

  /** Handlers running now. */
  get running(): number {
    return this.#running
  }

  /** Calls `start` now when a slot is free, else once one is; the caller calls `free()` when its handler is done. */
  take(priority: number, start: () => void): void {
    if (this.#running < this.max) {
      this.#running++
      start()
      return
    }
    this.#push({ priority, seq: this.#seq++, start })
  }

  /** A handler is done: its slot goes to the next waiting call. */
  free(): void {
    const next = this.#pop()
    if (next) next.start()
    else this.#running--
  }

  /** Starts nothing more: the calls still waiting are dropped. */
  close(): void {
    this.#waiting.length = 0
  }

  #push(item: Waiting): void {
    const heap = this.#waiting
    heap.push(item)
    for (let i = heap.length - 1; i > 0; ) {
      const parent = (i - 1) >> 1
      if (!before(heap[i], heap[parent])) break
      ;[heap[i], heap[parent]] = [heap[parent], heap[i]]
      i = parent
    }
  }

  #pop(): Waiting | undefined {
    const heap = this.#waiting
    const top = heap[0]
    const last = heap.pop()
    if (heap.length === 0 || last === undefined) return top
    heap[0] = last
    for (let i = 0; ; ) {
      const left = 2 * i + 1
      const right = left + 1
      let first = i
      if (left < heap.length && before(heap[left], heap[first])) first = left
      if (right < heap.length && before(heap[right], heap[first])) first = right
      if (first === i) return top
      ;[heap[i], heap[first]] = [heap[first], heap[i]]
      i = first
    }
  }
}

function before(a: Waiting, b: Waiting): boolean {
  return a.priority !== b.priority ? a.priority > b.priority : a.seq < b.seq
}
