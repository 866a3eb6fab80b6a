/**
 * `svc runs get` as text: a run record's summary, then its attempts and
 * steps on one time axis, each with a bar scaled to the run's span so that
 * a line fits 80 columns, then the last entries the run logged.
 */
import type { RunRecord, StepRecord, Waitpoint } from '../types.ts'
import { unknownWaitpointType, waitpointTypeOfStep } from '../runtime/tasks/steps/waitpoint-kinds.ts'
import { formatDuration, formatInstant, formatLogEntry, msBetween, oneLine } from './runs-format.ts'

/** The columns a line of the timeline fits in. */
const WIDTH = 80
/** The widest label; longer ones are cut, so that every bar keeps some room. */
const MAX_LABEL = 32
const OFFSET_WIDTH = 9
const DURATION_WIDTH = 8
/** A bar is drawn in blocks: solid while the run worked, shaded while it waited. */
const WORK = '█'
const WAIT = '░'
/** The column of the summary's names (`Status`, `Waiting on`). */
const SUMMARY_NAME_WIDTH = 10
/** How many of the run's last log entries the summary shows. */
const LOG_TAIL = 5

/** One line of the timeline: an attempt or a step, with its times when the record has them. */
interface Entry {
  label: string
  start?: number
  end?: number
  wait: boolean
  /** Lines printed under it, such as an attempt's error. */
  notes: string[]
}

/** The text of `run`, as seen at `now` (ms since the epoch): a live run's last bar reaches it. */
export function describeRunRecord(run: RunRecord, now: number = Date.now()): string[] {
  return [...summary(run, now), '', ...timeline(run, now), ...logTail(run)]
}

function summary(run: RunRecord, now: number): string[] {
  const rows: [string, string][] = [
    ['Run', run.id],
    ['Task', run.taskName],
    ['Status', run.status],
    ['Trigger', trigger(run)],
  ]
  if (run.version !== undefined) rows.push(['Version', run.version])
  if (run.priority !== undefined) rows.push(['Priority', String(run.priority)])
  for (const { from, to, at } of run.migrations ?? []) rows.push(['', `moved from ${from} to ${to} at ${formatInstant(at)}`])
  rows.push(['Created', formatInstant(run.createdAt)])
  if (run.runAt !== undefined) rows.push(['Due', formatInstant(run.runAt)])
  if (run.deadline !== undefined) rows.push(['Deadline', formatInstant(run.deadline)])
  if (run.startedAt !== undefined) rows.push(['Started', formatInstant(run.startedAt)])
  if (run.finishedAt !== undefined) {
    const took = msBetween(run.startedAt ?? run.createdAt, run.finishedAt)
    rows.push(['Finished', `${formatInstant(run.finishedAt)}${took === undefined ? '' : ` (took ${formatDuration(took)})`}`])
  }
  rows.push(['Attempts', String(run.attempts.length)])
  if (run.input !== undefined) rows.push(['Input', oneLine(run.input, WIDTH - SUMMARY_NAME_WIDTH - 1)])
  if ('result' in run) rows.push(['Result', oneLine(run.result, WIDTH - SUMMARY_NAME_WIDTH - 1)])
  const lastError = run.compensation?.error ?? run.attempts[run.attempts.length - 1]?.error
  if ((run.status === 'failed' || run.status === 'compensation_failed') && lastError !== undefined) rows.push(['Error', lastError])
  if (run.compensation) rows.push(['Compensation', compensationLine(run.compensation)])
  if (run.suspended) {
    const { stepKey, waitpoint, since } = run.suspended
    const waited = since === undefined ? undefined : msBetween(since, new Date(now).toISOString())
    const when =
      since === undefined ? '' : ` since ${formatInstant(since)}${waited === undefined ? '' : ` (for ${formatDuration(waited)})`}`
    rows.push(['Suspended', `at step ${stepKey}${when}`], ['Waiting on', describeWaitpoint(waitpoint)])
  }
  return rows.map(([name, value]) => `${name.padEnd(SUMMARY_NAME_WIDTH)} ${value}`)
}

function trigger(run: RunRecord): string {
  const parts: string[] = [run.trigger]
  if (run.replayOf !== undefined) parts.push(`of run ${run.replayOf}`)
  if (run.event !== undefined) parts.push(`${run.event.name} (${run.event.id})`)
  if (run.parentRunId !== undefined) parts.push(`from run ${run.parentRunId}`)
  return parts.join(' ')
}

function describeWaitpoint(waitpoint: Waitpoint): string {
  switch (waitpoint.type) {
    case 'sleep':
      return `sleep until ${formatInstant(waitpoint.until)}`
    case 'task':
      return `task ${waitpoint.task}, run ${waitpoint.runId}`
    case 'token':
      return `${waitpoint.callback ? 'a request to its callback URL, token' : 'token'} ${waitpoint.tokenId}${timesOut(waitpoint.timeoutAt)}`
    case 'event': {
      const match = waitpoint.match === undefined ? '' : ` matching ${oneLine(waitpoint.match, 60)}`
      return `event ${waitpoint.name}${match}${timesOut(waitpoint.timeoutAt)}`
    }
    case 'signal':
      return `signal ${waitpoint.signal}${timesOut(waitpoint.timeoutAt)}`
    default:
      return unknownWaitpointType(waitpoint)
  }
}

function compensationLine(compensation: NonNullable<RunRecord['compensation']>): string {
  const why = compensation.reason === 'cancelled' ? 'after it was cancelled' : 'after it failed'
  if (compensation.status === 'running') return `running ${why}`
  if (compensation.status === 'completed') return `every completed step undone ${why}`
  const failed = compensation.failed
  return failed === undefined ? `failed ${why}` : `the compensation of step "${failed.step}" kept failing: ${failed.error}`
}

function timesOut(at: string | undefined): string {
  return at === undefined ? '' : ` (times out at ${formatInstant(at)})`
}

function timeline(run: RunRecord, now: number): string[] {
  const entries = timelineEntries(run, now)
  if (entries.length === 0) {
    return [
      run.finishedAt === undefined ? `Timeline: nothing yet (the run is ${run.status})` : 'Timeline: the run recorded no attempt or step',
    ]
  }
  const timed = entries.filter((e) => e.start !== undefined)
  const origin = Math.min(...timed.map((e) => e.start!), parse(run.startedAt) ?? Number.POSITIVE_INFINITY)
  const last = Math.max(...timed.map((e) => e.end!), parse(run.finishedAt) ?? Number.NEGATIVE_INFINITY)
  const span = Math.max(1, last - origin)
  const labelWidth = Math.min(MAX_LABEL, Math.max(...entries.map((e) => e.label.length)))
  const barWidth = WIDTH - (2 + OFFSET_WIDTH + 2 + labelWidth + 2 + DURATION_WIDTH + 2)
  const indent = ' '.repeat(2 + OFFSET_WIDTH + 2)
  const lines = [
    timed.length === 0
      ? 'Timeline (this record keeps no step timings)'
      : `Timeline (${formatDuration(span)} from the first start, ${WORK} working, ${WAIT} waiting)`,
  ]
  for (const entry of entries) {
    const label = clip(entry.label, labelWidth).padEnd(labelWidth)
    if (entry.start === undefined || entry.end === undefined) {
      lines.push(`  ${'-'.padEnd(OFFSET_WIDTH)}  ${label}  ${'-'.padStart(DURATION_WIDTH)}`.trimEnd())
    } else {
      const offset = `+${formatDuration(entry.start - origin)}`.padEnd(OFFSET_WIDTH)
      const duration = formatDuration(entry.end - entry.start).padStart(DURATION_WIDTH)
      const drawn = bar(entry.start - origin, entry.end - origin, span, barWidth, entry.wait ? WAIT : WORK)
      lines.push(`  ${offset}  ${label}  ${duration}  ${drawn}`)
    }
    for (const note of entry.notes) lines.push(clip(`${indent}${note}`, WIDTH))
  }
  return lines
}

/**
 * The attempts and steps, in the order they started; an attempt comes
 * before the steps that start with it. Steps the record keeps no timings
 * for were recorded before timings were kept, so before the timed ones:
 * they come first, in the order they were recorded.
 */
function timelineEntries(run: RunRecord, now: number): Entry[] {
  const timed: Entry[] = []
  const untimed: Entry[] = []
  for (const attempt of run.attempts) {
    const start = parse(attempt.startedAt)
    const entry: Entry = {
      label: label('attempt', String(attempt.index), attempt.error === undefined ? '' : 'failed'),
      wait: false,
      notes: attempt.error === undefined ? [] : [`error: ${attempt.error}`],
    }
    if (start === undefined) untimed.push(entry)
    else timed.push({ ...entry, start, end: start + attempt.durationMs })
  }
  for (const [key, step] of Object.entries(run.steps)) {
    const start = parse(step.startedAt)
    const entry = stepEntry(key, step)
    if (start === undefined) untimed.push(entry)
    else timed.push({ ...entry, start, end: start + (step.durationMs ?? 0) })
  }
  const suspended = run.suspended
  if (suspended !== undefined && !(suspended.stepKey in run.steps)) {
    const start = parse(suspended.since)
    const entry: Entry = { label: label('wait', suspended.stepKey, `${suspended.waitpoint.type}, waiting`), wait: true, notes: [] }
    if (start === undefined) untimed.push(entry)
    else timed.push({ ...entry, start, end: Math.max(start, now) })
  }
  // Array.prototype.sort is stable: attempts, listed first, stay before steps that start at the same instant.
  timed.sort((a, b) => a.start! - b.start!)
  return [...untimed, ...timed]
}

function stepEntry(key: string, step: StepRecord): Entry {
  // What a met wait waited on, as its waitpoint's type names it.
  const on = waitpointTypeOfStep(step.kind)
  if (on === undefined) return { label: label(step.kind === 'enqueue' ? 'enqueue' : 'step', key, ''), wait: false, notes: [] }
  const about = [on === 'event' ? eventName(step.output) : on]
  if (step.status === 'timed_out') about.push('timed out')
  else if (on === 'task' && isFailedChild(step.output)) about.push('failed')
  return { label: label('wait', key, about.join(', ')), wait: true, notes: [] }
}

/** `<what> <key> (<about>)`, the key cut so that the whole fits `MAX_LABEL`. */
function label(what: string, key: string, about: string): string {
  const suffix = about === '' ? '' : ` (${about})`
  const room = Math.max(2, MAX_LABEL - what.length - 1 - suffix.length)
  return clip(`${what} ${clip(key, room)}${suffix}`, MAX_LABEL)
}

/** `event <name>` of a met event wait, whose output is the event. */
function eventName(output: unknown): string {
  const name = (output as { name?: unknown } | undefined)?.name
  return typeof name === 'string' ? `event ${name}` : 'event'
}

function isFailedChild(output: unknown): boolean {
  return (output as { ok?: unknown } | undefined)?.ok === false
}

/** A bar over columns `[from, to)` of `width`, at least one block wide. */
function bar(from: number, to: number, span: number, width: number, block: string): string {
  const first = Math.min(width - 1, Math.floor((from / span) * width))
  const end = Math.max(first + 1, Math.min(width, Math.ceil((to / span) * width)))
  return `${' '.repeat(first)}${block.repeat(end - first)}`
}

function logTail(run: RunRecord): string[] {
  const kept = run.logs?.kept ?? []
  if (kept.length === 0) return []
  const dropped = run.logs?.dropped ?? 0
  const shown = kept.slice(-LOG_TAIL)
  const heading =
    shown.length === kept.length && dropped === 0
      ? 'Logs'
      : `Logs (the last ${shown.length} of ${kept.length + dropped}; svc runs logs ${run.id} prints all it keeps)`
  return ['', heading, ...shown.map((entry) => `  ${formatLogEntry(entry)}`)]
}

function clip(text: string, width: number): string {
  return text.length > width ? `${text.slice(0, width - 1)}…` : text
}

function parse(iso: string | undefined): number | undefined {
  if (iso === undefined) return undefined
  const ms = Date.parse(iso)
  return Number.isNaN(ms) ? undefined : ms
}
