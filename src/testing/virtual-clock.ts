/**
 * A clock whose time moves only when it is told to: the clock of
 * `svcjs/testing`. Timers wait in a queue ordered by their due instant, then
 * by the order they were set in, as the system's timers fire; `fireNext`
 * moves the time to the first one's instant and calls it. Nothing here reads
 * the wall clock, so a test can run a month of a task's time in a moment.
 */
import type { Clock, TimerHandle } from '../runtime/tasks/base/clock.ts'

interface Timer {
  at: number
  seq: number
  fn: () => void
  cleared: boolean
}

export class VirtualClock implements Clock {
  #now: number
  #seq = 0
  /** A binary heap by (`at`, `seq`); cleared timers stay until they reach the top. */
  readonly #heap: Timer[] = []

  constructor(start: number) {
    if (!Number.isFinite(start)) throw new TypeError(`VirtualClock: the start must be a time in epoch milliseconds (got ${start})`)
    this.#now = start
  }

  now(): number {
    return this.#now
  }

  /** `unref` is for real timers: a virtual one never holds a process open. */
  setTimer(fn: () => void, ms: number, _unref?: boolean): TimerHandle {
    const delay = Number.isFinite(ms) && ms > 0 ? ms : 0
    const timer: Timer = { at: this.#now + delay, seq: this.#seq++, fn, cleared: false }
    this.#push(timer)
    return timer
  }

  clearTimer(handle: TimerHandle | undefined): void {
    if (handle && typeof handle === 'object' && 'cleared' in handle) (handle as Timer).cleared = true
  }

  /** The instant the next timer is due at, or `undefined` when none is set. */
  nextDue(): number | undefined {
    this.#dropCleared()
    return this.#heap[0]?.at
  }

  /** The instants the timers set are due at, earliest first. */
  dueTimes(): number[] {
    return this.#heap
      .filter((timer) => !timer.cleared)
      .map((timer) => timer.at)
      .sort((a, b) => a - b)
  }

  /** How many timers are set. */
  get pending(): number {
    return this.#heap.filter((timer) => !timer.cleared).length
  }

  /**
   * Fires the next timer when it is due by `until`: the time moves to its
   * instant (never back), and it is called. Returns whether one fired.
   */
  fireNext(until: number): boolean {
    this.#dropCleared()
    const next = this.#heap[0]
    if (next === undefined || next.at > until) return false
    this.#pop()
    this.#now = Math.max(this.#now, next.at)
    next.fn()
    return true
  }

  /** Moves the time forward to `at`, firing nothing: call it after the timers due by `at` have fired. */
  moveTo(at: number): void {
    if (at > this.#now) this.#now = at
  }

  #dropCleared(): void {
    while (this.#heap[0]?.cleared) this.#pop()
  }

  #push(timer: Timer): void {
    const heap = this.#heap
    heap.push(timer)
    let i = heap.length - 1
    while (i > 0) {
      const parent = (i - 1) >> 1
      if (!before(heap[i], heap[parent])) break
      ;[heap[i], heap[parent]] = [heap[parent], heap[i]]
      i = parent
    }
  }

  #pop(): void {
    const heap = this.#heap
    const last = heap.pop()!
    if (heap.length === 0) return
    heap[0] = last
    let i = 0
    for (;;) {
      const left = 2 * i + 1
      const right = left + 1
      let least = i
      if (left < heap.length && before(heap[left], heap[least])) least = left
      if (right < heap.length && before(heap[right], heap[least])) least = right
      if (least === i) return
      ;[heap[i], heap[least]] = [heap[least], heap[i]]
      i = least
    }
  }
}

function before(a: Timer, b: Timer): boolean {
  return a.at < b.at || (a.at === b.at && a.seq < b.seq)
}
