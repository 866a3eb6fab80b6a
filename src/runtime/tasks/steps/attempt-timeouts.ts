/**
 * Attempt timeouts: how long one attempt of a handler may run (its task's
 * `timeout`), on one timer per distinct timeout rather than one per
 * attempt. With many attempts in flight, a timer each (a Node `Timeout`
 * and its callback) was most of what an attempt held. The timers of runs
 * that wait (delays, backoff, sleeps) are elsewhere: `waitpoints.ts`.
 *
 * Attempts with the same timeout come due in the order they started, so
 * each timeout keeps its attempts in a list, oldest first, linked through
 * the attempts themselves: adding and removing one allocates nothing. The
 * list's timer is armed for its oldest attempt; when it fires, every
 * attempt due by then expires, and the timer is armed again for the next.
 * A removed attempt leaves the timer as it is: the timer finds nothing due
 * and arms itself for the next attempt, or it is cleared once the list is
 * empty, so an idle engine holds no timer. Deadlines are read from, and
 * timers set on, the runtime's clock (clock.ts). Edge-safe.
 */
import type { Clock, TimerHandle } from '../base/clock.ts'

/** Something that expires at a deadline: an attempt in flight. */
export abstract class Expiring {
  /** When it expires, in whole epoch milliseconds of the runtime's clock. */
  expiresAt = 0
  /** Its neighbours in its list, and the list, while it is in one. */
  prevDue: Expiring | undefined = undefined
  nextDue: Expiring | undefined = undefined
  dueIn: TimeoutList | undefined = undefined
  /** Called once its deadline has passed, after it left its list. */
  abstract expire(): void
}

export class AttemptTimeouts {
  readonly #lists = new Map<number, TimeoutList>()
  readonly #clock: Clock

  constructor(clock: Clock) {
    this.#clock = clock
  }

  /** `item` expires `ms` milliseconds from now, unless it is removed first. */
  add(item: Expiring, ms: number): void {
    let list = this.#lists.get(ms)
    if (list === undefined) this.#lists.set(ms, (list = new TimeoutList(ms, this.#clock)))
    list.push(item)
  }

  /** `item` no longer expires; nothing when it is in no list. */
  delete(item: Expiring): void {
    item.dueIn?.remove(item)
  }

  /** Forgets every deadline and clears every timer. */
  clear(): void {
    for (const list of this.#lists.values()) list.clear()
  }
}

/** The attempts of one timeout, oldest first, and the timer of the oldest. */
class TimeoutList {
  readonly #ms: number
  readonly #clock: Clock
  #head: Expiring | undefined
  #tail: Expiring | undefined
  #timer: TimerHandle | undefined
  /** The deadline the timer is armed for. */
  #armedFor = 0

  constructor(ms: number, clock: Clock) {
    this.#ms = ms
    this.#clock = clock
  }

  push(item: Expiring): void {
    // Whole milliseconds, rounded up: never earlier than `ms` from now.
    item.expiresAt = Math.ceil(this.#clock.now()) + this.#ms
    item.dueIn = this
    item.prevDue = this.#tail
    this.#tail = item
    if (item.prevDue !== undefined) {
      item.prevDue.nextDue = item
      return
    }
    // The first of an empty list: the timer is for it.
    this.#head = item
    this.#arm(this.#ms, item.expiresAt)
  }

  remove(item: Expiring): void {
    const { prevDue, nextDue } = item
    if (prevDue === undefined) this.#head = nextDue
    else prevDue.nextDue = nextDue
    if (nextDue === undefined) this.#tail = prevDue
    else nextDue.prevDue = prevDue
    item.prevDue = item.nextDue = item.dueIn = undefined
    if (this.#head === undefined) this.clear()
  }

  clear(): void {
    for (let item = this.#head; item !== undefined; ) {
      const next = item.nextDue
      item.prevDue = item.nextDue = item.dueIn = undefined
      item = next
    }
    this.#head = this.#tail = undefined
    this.#clock.clearTimer(this.#timer)
    this.#timer = undefined
  }

  #arm(delay: number, deadline: number): void {
    this.#armedFor = deadline
    this.#timer = this.#clock.setTimer(() => this.#fire(), delay, false)
  }

  #fire(): void {
    this.#timer = undefined
    // The timer firing means its deadline has passed, whatever the clock
    // says (a timer may fire a little before its clock reads the deadline);
    // a clock past it means the timer fired late, and whatever came due
    // meanwhile goes too.
    const now = Math.max(this.#clock.now(), this.#armedFor)
    let item = this.#head
    while (item !== undefined && item.expiresAt <= now) {
      this.remove(item)
      item.expire()
      item = this.#head
    }
    if (item !== undefined && this.#timer === undefined) this.#arm(Math.ceil(item.expiresAt - now), item.expiresAt)
  }
}
