/**
 * Retention (docs/stores.md "Retention"): a finished run is kept for its
 * task's `route.retention`, or the runtime's default (7 days on a durable
 * store), from when it finished, as well as within the store's `maxRuns`.
 * Runs past it are deleted in the background, in bounded batches
 * (`RunStore.pruneFinished`), never on a run's own path: a round every
 * quarter of the shortest retention (at least every second, at most every
 * ten minutes) while the runtime runs, and from a function platform's
 * sweep when a round is due. Edge-safe.
 */
import type { Logger } from '../../types.ts'
import { errorMessage } from '../../errors.ts'
import { DEFAULT_RETENTION_SECONDS, retentionProblem } from '../../rules.ts'
import type { RunStore } from './store.ts'
import type { TaskDefinition } from '../../types/task-definition.ts'
import { FINISHED_STATUSES } from './store.ts'
import { type Clock, systemClock, type TimerHandle } from '../base/clock.ts'

/** Runs one `pruneFinished` call deletes at most. */
export const PRUNE_BATCH = 500
/** Batches of one task per round: a round deletes at most this many times `PRUNE_BATCH` runs of a task, and the next one goes on. */
const MAX_BATCHES = 20
const MIN_EVERY_MS = 1000
const MAX_EVERY_MS = 10 * 60 * 1000

/**
 * The runtime's default retention in ms, `undefined` to keep finished runs
 * within `maxRuns` only: the `retention` option (seconds, or `false`),
 * else `SVC_RETENTION` (seconds, or `off`), else 7 days on a durable store.
 */
export function resolveRetention(option: unknown, env: Record<string, string | undefined>, durable: boolean): number | undefined {
  const text = env.SVC_RETENTION?.trim()
  const fromEnv = option === undefined && text !== undefined && text !== ''
  const value = fromEnv ? (text === 'off' ? false : /^\d+(?:\.\d+)?$/.test(text) ? Number(text) : text) : option
  if (value === false) return undefined
  if (value === undefined) return durable ? DEFAULT_RETENTION_SECONDS * 1000 : undefined
  const problem = fromEnv ? retentionProblem(value, 'SVC_RETENTION', text) : retentionProblem(value, 'retention')
  if (problem) throw new TypeError(`createTaskRuntime(): ${problem}${fromEnv ? ", or 'off' to keep them within maxRuns" : ''}`)
  return (value as number) * 1000
}

export interface RetentionOptions {
  store: RunStore
  tasks: ReadonlyMap<string, TaskDefinition>
  logger: Logger
  /** What the cutoff is reckoned from and rounds are timed on. @default systemClock */
  clock?: Clock
  /** For the tasks without `route.retention`, and the runs of tasks the app no longer has; `undefined` keeps them (within `maxRuns`). */
  defaultMs: number | undefined
}

export class Retention {
  /** How often a round runs; `undefined` when nothing is ever pruned (no retention, or a store without `pruneFinished`). */
  readonly everyMs: number | undefined
  readonly #options: RetentionOptions
  readonly #clock: Clock
  #timer: TimerHandle | undefined
  #round: Promise<number> | undefined
  #lastRound = Number.NEGATIVE_INFINITY
  #closed = false

  constructor(options: RetentionOptions) {
    this.#options = options
    this.#clock = options.clock ?? systemClock
    const spans = [...options.tasks.values()].map((task) => task.retentionMs ?? options.defaultMs)
    spans.push(options.defaultMs)
    const shortest = Math.min(...spans.filter((ms) => ms !== undefined))
    this.everyMs =
      options.store.pruneFinished === undefined || shortest === Number.POSITIVE_INFINITY
        ? undefined
        : Math.min(MAX_EVERY_MS, Math.max(MIN_EVERY_MS, Math.floor(shortest / 4)))
  }

  /** Runs a round now (after the caller's turn), then every `everyMs`, until `close()`. */
  start(): void {
    if (this.everyMs === undefined || this.#closed || this.#timer !== undefined) return
    this.#arm(0)
  }

  /** A round, unless one ran within `everyMs`: a function platform's sweep, which has no timers between requests. */
  due(now = this.#clock.now()): Promise<number> {
    if (this.everyMs === undefined || now - this.#lastRound < this.everyMs) return Promise.resolve(0)
    return this.round(now)
  }

  /**
   * Deletes, task by task, the finished runs past their retention at `now`,
   * up to `MAX_BATCHES` batches a task; resolves to how many went. A round
   * asked for while one runs is that round. Never rejects: a failure is
   * logged, and the next round tries again.
   */
  round(now = this.#clock.now()): Promise<number> {
    this.#round ??= this.#prune(now).finally(() => {
      this.#round = undefined
    })
    return this.#round
  }

  close(): void {
    this.#closed = true
    this.#clock.clearTimer(this.#timer)
    this.#timer = undefined
  }

  async #prune(now: number): Promise<number> {
    this.#lastRound = now
    const { store, tasks, logger, defaultMs } = this.#options
    let gone = 0
    try {
      // Only tasks that have finished runs; among them those the app no longer has.
      for (const { taskName } of await store.countRunsByTask(FINISHED_STATUSES)) {
        const keepMs = tasks.get(taskName)?.retentionMs ?? defaultMs
        if (keepMs === undefined) continue
        const before = new Date(now - keepMs).toISOString()
        for (let batch = 0; batch < MAX_BATCHES && !this.#closed; batch++) {
          const deleted = await store.pruneFinished!(taskName, before, PRUNE_BATCH)
          gone += deleted
          if (deleted < PRUNE_BATCH) break
        }
      }
    } catch (error) {
      logger.warn(
        `[svc] task runtime: deleting finished runs past their retention failed (tried again in ${this.everyMs} ms): ${errorMessage(error)}`,
      )
    }
    return gone
  }

  #arm(ms: number): void {
    this.#timer = this.#clock.setTimer(
      () => {
        this.round().finally(() => {
          if (!this.#closed) this.#arm(this.everyMs!)
        })
      },
      ms,
      // Housekeeping never keeps a process alive, whatever `unrefTimers` says.
      true,
    )
  }
}
