/**
 * The engine's entry for a run it dispatches: from the start of its attempt
 * to the end of what follows (the run's end written, a retry armed, a lease
 * released). A plain object with every field declared, its flags in one
 * number, and no promise of its own until `drain()` or `sweep()` asks for
 * one: with many runs in flight, what each one holds is what the engine
 * holds. Edge-safe.
 */
import type { RunRecord } from '../types.ts'
import type { InvocationHandle } from './runner.ts'

const AGAIN = 1
const LEASED = 2
const STOPPED = 4
const ENDED = 8
const OVER = 16

export class InFlight {
  /**
   * The run's id and task, not its record: the attempt holds what it needs
   * of that, and a record the caller of `trigger()` let go is not kept.
   */
  readonly id: string
  readonly taskName: string
  /** The attempt, while it runs. */
  handle: InvocationHandle | undefined = undefined
  #flags: number
  #resolve: (() => void) | undefined = undefined
  #done: Promise<void> | undefined = undefined

  constructor(run: RunRecord, leased: boolean) {
    this.id = run.id
    this.taskName = run.taskName
    this.#flags = leased ? LEASED : 0
  }

  /** Dispatch again once this invocation ends. */
  get again(): boolean {
    return (this.#flags & AGAIN) !== 0
  }
  set again(on: boolean) {
    this.#set(AGAIN, on)
  }

  /** On a shared store: the attempt runs under this engine's lease on the run. */
  get leased(): boolean {
    return (this.#flags & LEASED) !== 0
  }
  set leased(on: boolean) {
    this.#set(LEASED, on)
  }

  /**
   * The run was cancelled, or its lease lost, during this dispatch: the
   * attempt is aborted and nothing it ends with is recorded.
   */
  get stopped(): boolean {
    return (this.#flags & STOPPED) !== 0
  }
  set stopped(on: boolean) {
    this.#set(STOPPED, on)
  }

  /** The run's end is written and its waiters answered: a later waiter reads the store. */
  get ended(): boolean {
    return (this.#flags & ENDED) !== 0
  }
  set ended(on: boolean) {
    this.#set(ENDED, on)
  }

  /** Settles once the dispatch is over: the invocation, its transition and any re-dispatch started. */
  done(): Promise<void> {
    if ((this.#flags & OVER) !== 0) return Promise.resolve()
    return (this.#done ??= new Promise((resolve) => {
      this.#resolve = resolve
    }))
  }

  /** The dispatch is over. */
  finish(): void {
    this.#flags |= OVER
    this.#resolve?.()
  }

  #set(flag: number, on: boolean): void {
    this.#flags = on ? this.#flags | flag : this.#flags & ~flag
  }
}
