/** Helpers every suite shares: waiting on a condition, a logger that records instead of printing, and step records without their timings. */
import { expect } from 'vitest'
import type { Logger, StepRecord } from '../src/types.ts'

type Level = 'info' | 'warn' | 'error'

export interface RecordingLogger extends Logger {
  lines: { level: Level; text: string }[]
  /** Every recorded line, or only those of `level`, joined by newlines. */
  text(level?: Level): string
}

/** A logger that keeps what it is told, so tests can assert on it and the output stays quiet. */
export function recordingLogger(): RecordingLogger {
  const lines: RecordingLogger['lines'] = []
  const push =
    (level: Level) =>
    (...args: unknown[]) =>
      void lines.push({ level, text: args.map((a) => (a instanceof Error ? `${a.name}: ${a.message}` : String(a))).join(' ') })
  return {
    lines,
    info: push('info'),
    warn: push('warn'),
    error: push('error'),
    text: (level) =>
      lines
        .filter((l) => !level || l.level === level)
        .map((l) => l.text)
        .join('\n'),
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms))
}

/**
 * The real clock and timer, captured at load before any test can install fake timers.
 * What watches the system (`until`, bounds on a wait) runs on it, so it keeps working while
 * the system under test runs on `vi.useFakeTimers()`.
 */
export const wallClock = { now: Date.now, setTimeout: globalThis.setTimeout, clearTimeout: globalThis.clearTimeout }

/** What a truthy value of `T` can be: `until` resolves only to one of these. */
export type Truthy<T> = Exclude<T, false | 0 | '' | null | undefined>

/**
 * Polls `check` until it returns a truthy value, and resolves to that value. It waits on
 * the wall clock, also under `vi.useFakeTimers()`. The bound only turns a hang into a clear
 * failure; no test relies on it.
 */
export async function until<T>(check: () => T | Promise<T>, timeoutMs = 5000): Promise<Truthy<T>> {
  const deadline = wallClock.now() + timeoutMs
  for (;;) {
    const value = await check()
    if (value) return value as Truthy<T>
    if (wallClock.now() > deadline) throw new Error(`Timed out after ${timeoutMs} ms waiting for a condition`)
    await new Promise((resolve) => wallClock.setTimeout(resolve, 10))
  }
}

/**
 * `step` without its timing (`startedAt`, `durationMs`), once both are
 * checked: an ISO time and a whole number of milliseconds, 0 or more.
 * Tests compare the rest of a record exactly.
 */
export function untimed(step: StepRecord | undefined): Omit<StepRecord, 'startedAt' | 'durationMs'> | undefined {
  if (step === undefined) return undefined
  const { startedAt, durationMs, ...rest } = step
  expect(startedAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
  expect(Number.isInteger(durationMs) && durationMs! >= 0).toBe(true)
  return rest
}

/** Each step of `steps` `untimed`. */
export function untimedSteps(steps: Record<string, StepRecord>): Record<string, Omit<StepRecord, 'startedAt' | 'durationMs'>> {
  return Object.fromEntries(Object.entries(steps).map(([key, step]) => [key, untimed(step)!]))
}
