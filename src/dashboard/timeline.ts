/**
 * A run's timeline: one time axis from its creation to its end (or now),
 * with a row for its wait to start, one per ended attempt, one per step in
 * the order the steps began, one for what it waits on now, and its log
 * entries as marks above. Each bar carries `data-start-ms` (from the run's
 * creation) and `data-duration-ms`, as recorded. Rows have a fixed height and
 * the whole chart is one SVG string, so thousands of steps draw in one go.
 */
import { duration } from './dom.ts'
import { attrs, esc, px, svgBox, timeStep } from './svg.ts'
import { unknownWaitpointType, WAITPOINT_KINDS, waitpointTypeOfStep } from '../runtime/tasks/steps/waitpoint-kinds.ts'
import type { Run } from './types.ts'

const ROW = 18
/** The height of a bar, as `.tl-bar` in style.css sets it. */
const BAR = 10
const HEAD = 22
const LOGS = 18

type StepRecord = Run['steps'][string]
type Waitpoint = NonNullable<Run['suspended']>['waitpoint']

/** One row: a bar from `start` for `ms` (both from the run's creation), or a label alone when the record has no timing. */
interface Row {
  row: 'queue' | 'attempt' | 'step' | 'suspended'
  key: string
  label: string
  class: string
  start?: number
  ms?: number
  title: string
}

/** The rows of `run`, top to bottom, timed from its creation; `now` ends what is still going on. */
function timelineRows(run: Run, now: number): Row[] {
  const t0 = Date.parse(run.createdAt)
  let rows: Row[] = []
  const began = run.startedAt ? Date.parse(run.startedAt) : undefined
  const queued = (began ?? (run.finishedAt ? Date.parse(run.finishedAt) : now)) - t0
  rows.push({
    row: 'queue',
    key: 'queue',
    label: 'queued',
    class: 'k-queue',
    start: 0,
    ms: queued,
    title: `Waited ${duration(queued)} to start`,
  })
  for (const attempt of run.attempts) {
    const title = `Attempt ${attempt.index}: ${duration(attempt.durationMs)}${attempt.error ? `, failed: ${attempt.error}` : ''}`
    rows.push({
      row: 'attempt',
      key: String(attempt.index),
      label: `attempt ${attempt.index}`,
      class: attempt.error ? 'k-attempt k-failed' : 'k-attempt',
      start: Date.parse(attempt.startedAt) - t0,
      ms: attempt.durationMs,
      title,
    })
  }
  // Steps without timings were recorded before timings were kept, so before the timed ones.
  const steps = Object.entries(run.steps).map(([key, step]) => stepRow(key, step, t0))
  const untimed = steps.filter((row) => row.start === undefined)
  const timed = steps.filter((row) => row.start !== undefined).sort((a, b) => a.start! - b.start!)
  rows = rows.concat(untimed, timed)
  if (run.suspended) {
    const { stepKey, waitpoint, since } = run.suspended
    const start = since ? Date.parse(since) - t0 : undefined
    const on = waitingOn(waitpoint)
    rows.push({
      row: 'suspended',
      key: stepKey,
      label: `${stepKey} · ${on}`,
      class: 'k-wait k-live',
      start,
      ms: start === undefined ? undefined : now - t0 - start,
      title: `${stepKey}: waiting on ${on}${since ? ` since ${since}` : ''}`,
    })
  }
  return rows
}

function stepRow(key: string, step: StepRecord, t0: number): Row {
  const kind = step.kind ?? 'step'
  const wait = waitpointTypeOfStep(step.kind) !== undefined
  const label = wait ? `${key} · ${waitedOn(step)}` : kind === 'enqueue' ? `${key} · enqueue` : key
  const timedOut = step.status === 'timed_out' ? ', timed out' : ''
  if (step.startedAt === undefined)
    return { row: 'step', key, label, class: `k-${kind}`, title: `${key} (${kind}${timedOut}): recorded without timing` }
  const ms = step.durationMs ?? 0
  return {
    row: 'step',
    key,
    label,
    class: wait ? `k-wait k-${kind}` : `k-${kind}`,
    start: Date.parse(step.startedAt) - t0,
    ms,
    title: `${key} (${kind}${timedOut}): ${duration(ms)}`,
  }
}

/** What a met wait waited on, as far as its output tells. */
function waitedOn(step: StepRecord): string {
  const type = waitpointTypeOfStep(step.kind)
  if (type === undefined) return step.kind ?? 'step'
  const name =
    type === 'event'
      ? (step.output as { event?: { name?: string } } | undefined)?.event?.name
      : type === 'signal'
        ? (step.output as { name?: string } | undefined)?.name
        : undefined
  return name ? `${WAITPOINT_KINDS[type].label} ${name}` : WAITPOINT_KINDS[type].label
}

/** What the run waits on now. */
function waitingOn(waitpoint: Waitpoint): string {
  switch (waitpoint.type) {
    case 'sleep':
      return `sleep until ${new Date(waitpoint.until).toLocaleTimeString()}`
    case 'task':
      return `run of ${waitpoint.task}`
    case 'event':
      return `event ${waitpoint.name}`
    case 'token':
      return waitpoint.callback ? 'callback' : 'token'
    case 'signal':
      return `signal ${waitpoint.signal}`
    default:
      return unknownWaitpointType(waitpoint)
  }
}

export interface TimelineView {
  element: HTMLElement
  /** Draws `run`'s timeline, and draws it again at the box's new width when that changes. */
  show(run: Run): void
}

export function timelineView(): TimelineView {
  const box = svgBox({ class: 'tl' })
  let titles = new Map<string, string>()
  // A step's bar gets its tooltip when the pointer first reaches it: thousands of
  // <title> elements up front would slow the drawing for tooltips seldom read.
  box.element.addEventListener('mouseover', (event) => {
    const bar = event.target as Element
    const title = bar.matches('rect[data-row="step"]') && !bar.firstChild && titles.get(bar.getAttribute('data-key')!)
    if (title) bar.appendChild(document.createElementNS(bar.namespaceURI, 'title')).textContent = title
  })
  return {
    element: box.element,
    show(run) {
      box.draw((width) => {
        const now = Date.now()
        const rows = timelineRows(run, now)
        titles = new Map(rows.filter((row) => row.row === 'step').map((row) => [row.key, row.title]))
        return drawTimeline(run, rows, width, now)
      })
    },
  }
}

/** `rows` of `run` as markup `width` pixels wide: the axis and log marks, then the rows in a scrolling box. */
function drawTimeline(run: Run, rows: Row[], width: number, now: number): string {
  const t0 = Date.parse(run.createdAt)
  const logs = run.logs?.kept ?? []
  // The axis ends at the run's end, or now; and past anything recorded later than that, so that no bar is cut.
  let end = (run.finishedAt ? Date.parse(run.finishedAt) : now) - t0
  for (const row of rows) if (row.start !== undefined) end = Math.max(end, row.start + (row.ms ?? 0))
  for (const entry of logs) end = Math.max(end, Date.parse(entry.at) - t0)
  const span = Math.max(end, 1)
  const label = Math.min(170, Math.floor(width * 0.35))
  const plot = Math.max(width - label - 10, 10)
  const x = (ms: number) => label + (ms / span) * plot
  const step = timeStep(span, Math.floor(plot / 70))
  const height = rows.length * ROW

  const frame = { 'data-start': run.createdAt, 'data-span-ms': span, 'data-axis-x': label, 'data-axis-width': plot }
  let head = `<svg class="tl-head" width="${width}" height="${HEAD + (logs.length ? LOGS : 0)}"${attrs(frame)}>`
  let grid = ''
  for (let t = 0; t <= span; t += step) {
    const anchor = t === 0 ? 'start' : x(t) > label + plot - 24 ? 'end' : 'middle'
    head += `<text class="tick" x="${px(x(t))}" y="12" text-anchor="${anchor}">${t === 0 ? '0' : esc(duration(t))}</text>`
    grid += `M${px(x(t))} 0V${height}`
  }
  head += `<line class="tl-axis" x1="${label}" x2="${label + plot}" y1="${HEAD - 3}" y2="${HEAD - 3}"/>`
  if (logs.length) {
    head += `<text class="label" x="4" y="${HEAD + 12}">logs</text>`
    for (const entry of logs) {
      const at = Date.parse(entry.at) - t0
      const mark = {
        class: `log l-${entry.level}`,
        cx: px(x(at)),
        cy: HEAD + 8,
        r: 4,
        'data-seq': entry.seq,
        'data-level': entry.level,
        'data-at-ms': at,
      }
      head += `<circle${attrs(mark)}><title>${esc(`+${duration(at)} ${entry.level}: ${entry.message}`)}</title></circle>`
    }
  }
  head += '</svg>'

  // Labels are HTML in a foreignObject: one block of lines lays out in a fraction of the time of as many SVG texts, and CSS cuts them short.
  let labels = ''
  let bars = ''
  rows.forEach((row, i) => {
    const timed = row.start !== undefined && row.ms !== undefined
    labels += `<div${timed ? '' : attrs({ class: 'untimed', 'data-key': row.key })}${attrs({ title: row.label.length > 24 ? row.label : undefined })}>${esc(row.label)}</div>`
    if (!timed) return
    const title = row.row === 'step' ? '' : `<title>${esc(row.title)}</title>`
    // Written out rather than through attrs(): this runs once per step.
    bars += `<rect class="tl-bar ${row.class}" x="${px(x(row.start!))}" y="${i * ROW + (ROW - BAR) / 2}" width="${px(Math.max((row.ms! / span) * plot, 1))}" data-row="${row.row}" data-key="${esc(row.key)}" data-start-ms="${row.start}" data-duration-ms="${row.ms}">${title}</rect>`
  })
  return `${head}<div class="tl-body scroll"><svg class="tl-rows" width="${width}" height="${height}"><path class="grid" d="${grid}"/><foreignObject width="${label}" height="${height}"><div class="tl-labels">${labels}</div></foreignObject>${bars}</svg></div>`
}
