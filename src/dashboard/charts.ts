/**
 * One task's charts over the last hour or day: its runs per time bucket,
 * stacked by status, the share of finished runs that failed, and the median
 * and 95th percentile duration of its finished runs. Each mark carries its
 * counts in data attributes (`data-status`, `data-count`, `data-ms`).
 */
import { type Child, duration, fill, h } from './dom.ts'
import { attrs, countStep, esc, px, svgBox } from './svg.ts'
import { MAX_CHART_RUNS, percentile, type TaskStats, taskStats, windowRuns } from './task-stats.ts'
import { errorView } from './tasks.ts'

/** Finished statuses at the bottom of a stack, the live ones on top. */
const STACK = ['completed', 'failed', 'compensation_failed', 'cancelled', 'running', 'suspended', 'queued', 'scheduled']

const WINDOWS: Record<string, { label: string; size: number; count: number }> = {
  hour: { label: 'Last hour', size: 60_000, count: 60 },
  day: { label: 'Last day', size: 1_800_000, count: 48 },
}

/** The least time between two loads that run changes cause. */
const RELOAD_GAP_MS = 3000
const HEIGHT = 170
const MARGIN = { left: 34, right: 6, top: 8, bottom: 20 }

export interface ChartsView {
  element: HTMLElement
  /** Keeps the task choices in step with the app's tasks; the first task is chosen until the user picks one. */
  setTasks(names: string[]): void
  refresh(): Promise<void>
}

export function chartsView(): ChartsView {
  const task = h('select', { id: 'chart-task', name: 'chart-task' })
  const range = h(
    'select',
    { id: 'chart-window', name: 'window' },
    Object.entries(WINDOWS).map(([value, w]) => h('option', { value }, w.label)),
  )
  const figures = h('div', { class: 'figures' })
  const note = h('p', { role: 'status', class: 'muted chart-note' })
  const chart = svgBox({ class: 'chart' })
  const problems = h('div', { role: 'alert' })

  const load = async () => {
    const name = task.value
    const choice = `${name} ${range.value}`
    if (!name) return
    const { size, count } = WINDOWS[range.value]
    const end = Math.ceil(Date.now() / size) * size
    const start = end - size * count
    try {
      const { runs, capped } = await windowRuns(name, start)
      // The choice changed while the runs came: the load it started draws the new one.
      if (choice !== `${task.value} ${range.value}`) return
      const stats = taskStats(runs, start, size, count)
      fill(problems)
      fill(figures, figureList(stats))
      fill(
        note,
        capped
          ? `The window holds more than ${MAX_CHART_RUNS.toLocaleString('en')} runs of ${name}: these charts count the newest ${MAX_CHART_RUNS.toLocaleString('en')}, created since ${new Date(Date.parse(runs.at(-1)!.createdAt)).toLocaleString()}.`
          : null,
      )
      note.toggleAttribute('data-capped', capped)
      chart.draw((width) => drawBars(stats, size, width))
    } catch (error) {
      fill(problems, errorView(error))
    }
  }

  // Run changes reload the charts one load at a time, and at most every few seconds: a
  // window may be ten pages of runs, and a busy app changes runs all the time. A new
  // choice loads at once.
  let running: Promise<void> | undefined
  let again = false
  const refresh = (): Promise<void> => {
    if (running) {
      again = true
      return running
    }
    running = (async () => {
      do {
        again = false
        const began = Date.now()
        await load()
        if (again) await new Promise((resolve) => setTimeout(resolve, began + RELOAD_GAP_MS - Date.now()))
      } while (again)
    })().finally(() => (running = undefined))
    return running
  }
  task.addEventListener('change', load)
  range.addEventListener('change', load)

  return {
    element: h(
      'div',
      null,
      h('div', { class: 'filters' }, h('label', { for: 'chart-task' }, 'Task'), task, h('label', { for: 'chart-window' }, 'Window'), range),
      problems,
      figures,
      note,
      chart.element,
    ),
    setTasks(names) {
      const chosen = task.value
      fill(
        task,
        names.map((name) => h('option', { value: name }, name)),
      )
      task.value = names.includes(chosen) ? chosen : (names[0] ?? '')
      if (task.value !== chosen) void load()
    },
    refresh,
  }
}

/** The figures of the window: runs by status, the failure rate, p50 and p95. */
function figureList(stats: TaskStats): Child {
  const p50 = percentile(stats.durations, 50)
  const p95 = percentile(stats.durations, 95)
  const none = () => h('span', { class: 'muted' }, '—')
  const rate = stats.finished ? Number(((stats.failed / stats.finished) * 100).toFixed(1)) : undefined
  return [
    h(
      'dl',
      { class: 'facts' },
      h('dt', null, 'Runs'),
      h('dd', { class: 'fig-runs', 'data-count': stats.total }, String(stats.total)),
      h('dt', null, 'Failure rate'),
      h(
        'dd',
        { class: 'fig-rate', 'data-failed': stats.failed, 'data-finished': stats.finished },
        rate === undefined ? none() : `${rate}%`,
        h('span', { class: 'muted' }, ` (${stats.failed} failed of ${stats.finished} finished)`),
      ),
      h('dt', null, 'Duration'),
      h(
        'dd',
        null,
        h('span', { class: 'fig-p50', 'data-ms': p50 }, 'p50 ', p50 === undefined ? none() : h('strong', null, duration(p50))),
        ' · ',
        h('span', { class: 'fig-p95', 'data-ms': p95 }, 'p95 ', p95 === undefined ? none() : h('strong', null, duration(p95))),
        h('span', { class: 'muted' }, ` (of ${stats.durations.length} finished runs that started)`),
      ),
    ),
    h(
      'ul',
      { class: 'legend' },
      STACK.filter((status) => stats.counts[status]).map((status) =>
        h(
          'li',
          { 'data-status': status, 'data-count': stats.counts[status] },
          h('span', { class: `swatch c-${status}` }),
          `${status} ${stats.counts[status]}`,
        ),
      ),
    ),
  ]
}

/** Runs per bucket as stacked bars, with a count axis on the left and clock times below. */
function drawBars(stats: TaskStats, size: number, width: number): string {
  const plotW = Math.max(width - MARGIN.left - MARGIN.right, 10)
  const plotH = HEIGHT - MARGIN.top - MARGIN.bottom
  const most = Math.max(0, ...stats.buckets.map((b) => b.total))
  const step = countStep(most, 4)
  const top = Math.max(Math.ceil(most / step) * step, step)
  const y = (n: number) => MARGIN.top + plotH - (n / top) * plotH
  const slot = plotW / stats.buckets.length
  const clock = (ms: number) => new Date(ms).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' })

  let out = `<svg class="bars" width="${width}" height="${HEIGHT}" role="img" aria-label="Runs per ${esc(duration(size))} by status">`
  for (let n = 0; n <= top; n += step)
    out += `<line class="grid" x1="${MARGIN.left}" x2="${MARGIN.left + plotW}" y1="${px(y(n))}" y2="${px(y(n))}"/><text class="tick" x="${MARGIN.left - 4}" y="${px(y(n) + 4)}" text-anchor="end">${n}</text>`
  const every = Math.ceil(stats.buckets.length / Math.max(Math.floor(plotW / 64), 1))
  stats.buckets.forEach((bucket, i) => {
    const x = MARGIN.left + i * slot
    if (i % every === 0) out += `<text class="tick" x="${px(x)}" y="${HEIGHT - 5}">${esc(clock(bucket.start))}</text>`
    if (bucket.total === 0) return
    const span = `${clock(bucket.start)}–${clock(bucket.start + size)}`
    out += `<g${attrs({ 'data-bucket': new Date(bucket.start).toISOString(), 'data-total': bucket.total })}>`
    let below = 0
    for (const status of STACK) {
      const n = bucket.counts[status]
      if (!n) continue
      const rect = {
        class: `c-${status}`,
        x: px(x + slot * 0.1),
        y: px(y(below + n)),
        width: px(Math.max(slot * 0.8, 1)),
        height: px((n / top) * plotH),
        'data-status': status,
        'data-count': n,
      }
      out += `<rect${attrs(rect)}><title>${esc(`${span}: ${n} ${status}`)}</title></rect>`
      below += n
    }
    out += '</g>'
  })
  return `${out}</svg>`
}
