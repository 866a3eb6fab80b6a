/**
 * What reads a schedule's cron expression: checks it, says when it next
 * fires, and fires it in-process. The task runtime takes one as the `cron`
 * option. svc's hosts that tick schedules themselves (the Node server, the
 * CLI, the function platforms' check at start, the tasks Durable Object,
 * whose runtime schedules tick from its alarm) pass croner's
 * (`croner-clock.ts`); a worker's isolate, whose platform fires the static
 * schedules, runs without one.
 */
export interface CronClock {
  /**
   * Why `expression` (five fields, whitespace already normalized) cannot be
   * a schedule read in `timezone` (`null` is UTC), or `null` when it can.
   */
  problem(expression: string, timezone: string | null): string | null
  /** The first tick after `after`, or `null` when no date matches. */
  next(expression: string, timezone: string | null, after?: Date): Date | null
  /** Calls `onTick` at each tick, with the instant the tick stands for, until `stop()`. */
  start(expression: string, timezone: string | null, ticks: CronTicks): CronJob
}

export interface CronTicks {
  /** Unreference the timer where the platform supports it, so it never keeps a process alive. */
  unref: boolean
  onTick(tick: Date): Promise<unknown>
  /** A tick whose `onTick` threw or rejected. */
  onError(error: unknown): void
}

export interface CronJob {
  /** The next tick, or `null` once stopped. */
  next(): Date | null
  stop(): void
}
