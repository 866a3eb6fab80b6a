/** The text forms `svc runs` prints: durations, instants, values on one line and log entries. */
import type { RunLogEntry } from '../types.ts'

/**
 * Milliseconds as people read them: `850 ms`, `1.5 s`, `30 s`, `2 min`,
 * `1.5 h`, as the runs dashboard writes them.
 */
export function formatDuration(ms: number): string {
  if (ms < 999.5) return `${Math.round(Math.max(0, ms))} ms`
  if (ms < 59_950) return `${Number((ms / 1000).toFixed(1))} s`
  if (ms < 3_597_000) return `${Number((ms / 60_000).toFixed(1))} min`
  return `${Number((ms / 3_600_000).toFixed(1))} h`
}

/** Milliseconds from one ISO instant to another, or `undefined` when either is missing or unreadable. */
export function msBetween(from: string | undefined, to: string | undefined): number | undefined {
  if (from === undefined || to === undefined) return undefined
  const ms = Date.parse(to) - Date.parse(from)
  return Number.isNaN(ms) ? undefined : ms
}

/** An ISO instant to the second: `2025-01-02T03:04:05Z`. */
export function formatInstant(iso: string): string {
  return iso.replace(/\.\d+Z$/, 'Z')
}

/** The widest version a table shows: a longer one is cut, and `svc runs get` shows it whole. */
const SHORT_VERSION = 12

/** A run's version as a table cell: cut to `SHORT_VERSION` characters, `-` when the run has none. */
export function shortVersion(version: string | undefined): string {
  if (version === undefined) return '-'
  return version.length > SHORT_VERSION ? `${version.slice(0, SHORT_VERSION - 1)}…` : version
}

/** `value` as JSON on one line, cut to `max` characters. */
export function oneLine(value: unknown, max: number): string {
  const text = JSON.stringify(value) ?? String(value)
  return text.length > max ? `${text.slice(0, max - 1)}…` : text
}

/** `<time> <LEVEL> [attempt N] [step key] message {attributes}`: one entry a run logged with `ctx.log`. */
export function formatLogEntry(entry: RunLogEntry): string {
  const parts = [entry.at, entry.level.toUpperCase().padEnd(5), `[attempt ${entry.attempt}]`]
  if (entry.step !== undefined) parts.push(`[step ${entry.step}]`)
  parts.push(entry.message)
  if (entry.attributes !== undefined && Object.keys(entry.attributes).length > 0) parts.push(JSON.stringify(entry.attributes))
  return parts.join(' ')
}

/** What a run no longer keeps: `n` entries logged between `after` and the next kept one. */
export function droppedNote(n: number): string {
  return `(${n} log ${n === 1 ? 'entry was' : 'entries were'} dropped: a run keeps only its last entries)`
}
