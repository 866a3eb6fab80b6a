/**
 * The Runs table: filtered by task and by any number of statuses, newest
 * first, a page at a time with "Load more", and refreshed when the event
 * stream says a run changed.
 */
import { MAX_RUNS_LIMIT } from '../runtime/admin/runs-query.ts'
import { api } from './api.ts'
import { click, dataTable, fill, h, statusBadge, time } from './dom.ts'
import { errorView } from './tasks.ts'
import { type RunRow, STATUSES } from './types.ts'

/** Rows the table starts with, and rows each "Load more" adds. */
const PAGE = 100

export interface RunsView {
  element: HTMLElement
  /** Keeps the task filter's choices in step with the app's tasks. */
  setTasks(names: string[]): void
  refresh(): Promise<void>
}

interface Slice {
  runs: RunRow[]
  cursor?: string
}

export function runsView(openRun: (id: string) => void): RunsView {
  const task = h('select', { id: 'filter-task', name: 'task' }, h('option', { value: '' }, 'All tasks'))
  const statuses = STATUSES.map((value) => h('input', { type: 'checkbox', name: 'status', value }))
  const body = h('div', { class: 'runs' })
  const more = h('button', { type: 'button', class: 'more', hidden: true }, 'Load more')
  let rows: RunRow[] = []
  let cursor: string | undefined
  // A filter change starts a new generation: answers to an older one are dropped.
  let generation = 0
  // Loads run one after another, so a refresh and a "Load more" never interleave.
  let queue = Promise.resolve()
  let refreshQueued: Promise<void> | undefined

  /** `count` runs after `after` (from the newest without it), asked for in pages as large as the API allows. */
  async function fetchRuns(count: number, after?: string): Promise<Slice> {
    const runs: RunRow[] = []
    let next = after
    do {
      const query = new URLSearchParams({ limit: String(Math.min(count - runs.length, MAX_RUNS_LIMIT)) })
      if (task.value) query.set('task', task.value)
      for (const box of statuses) if (box.checked) query.append('status', box.value)
      if (next) query.set('cursor', next)
      const page = await api<Slice>('GET', `/__tasks/runs?${query}`)
      runs.push(...page.runs)
      next = page.cursor
    } while (next && runs.length < count)
    return { runs, cursor: next }
  }

  function show(error?: unknown): void {
    const alert = error === undefined ? null : h('div', { role: 'alert' }, errorView(error))
    fill(body, alert && rows.length === 0 ? null : table(rows, openRun), alert)
    more.hidden = cursor === undefined
  }

  /** Runs `load` in turn; its slice replaces (or extends) the rows unless a filter changed meanwhile. */
  function enqueue(load: () => Promise<Slice>, extend: boolean): Promise<void> {
    const run = async () => {
      const at = generation
      try {
        const slice = await load()
        if (at !== generation) return
        const focused = document.activeElement === more
        rows = unique(extend ? [...rows, ...slice.runs] : slice.runs)
        cursor = slice.cursor
        show()
        // The last page hides the button: keyboard focus moves on to the first run it added.
        if (focused && more.hidden && slice.runs[0])
          body.querySelector<HTMLElement>(`tr[data-run="${CSS.escape(slice.runs[0].id)}"] a`)?.focus()
      } catch (error) {
        if (at === generation) show(error)
      }
    }
    queue = queue.then(run)
    return queue
  }

  // A refresh asks again for as many rows as are shown (at least a page), not
  // only the first page: older pages kept as they were would show stale
  // statuses, keep runs that left the status filter, and leave a gap once more
  // than a page of runs arrived. Asked again, the rows stay one consecutive
  // slice of the list and the cursor continues right after them; runs that
  // new ones push past the end come back with "Load more".
  const refresh = (): Promise<void> => {
    refreshQueued ??= enqueue(() => {
      refreshQueued = undefined
      return fetchRuns(Math.max(PAGE, rows.length))
    }, false)
    return refreshQueued
  }

  const restart = () => {
    generation++
    rows = []
    cursor = undefined
    refreshQueued = undefined
    void refresh()
  }
  task.addEventListener('change', restart)
  for (const box of statuses) box.addEventListener('change', restart)
  // The button shows only while there is a cursor; a filter change that clears it meanwhile makes this a first page, which `unique` merges.
  more.addEventListener('click', () => void enqueue(() => fetchRuns(PAGE, cursor), true))

  return {
    element: h(
      'div',
      null,
      h(
        'div',
        { class: 'filters' },
        h('label', { for: 'filter-task' }, 'Task'),
        task,
        h(
          'fieldset',
          null,
          h('legend', null, 'Status'),
          statuses.map((box) => h('label', null, box, box.value)),
        ),
      ),
      body,
      more,
    ),
    setTasks(names) {
      const chosen = task.value
      fill(
        task,
        h('option', { value: '' }, 'All tasks'),
        names.map((name) => h('option', { value: name }, name)),
      )
      task.value = names.includes(chosen) ? chosen : ''
    },
    refresh,
  }
}

/** Each run once, where it first appears: a run may reach two pages when the list moves between them. */
function unique(runs: RunRow[]): RunRow[] {
  const seen = new Set<string>()
  return runs.filter((run) => !seen.has(run.id) && seen.add(run.id))
}

function table(runs: RunRow[], openRun: (id: string) => void): HTMLElement {
  if (runs.length === 0) return h('p', { class: 'muted' }, 'No runs match.')
  return dataTable(
    ['Run', 'Task', 'Status', 'Trigger', 'Created', 'Attempts'],
    runs.map((run) =>
      h(
        'tr',
        { 'data-run': run.id },
        h('td', null, h('a', { href: `#run/${run.id}`, onclick: click(() => openRun(run.id)) }, run.id)),
        h('td', null, h('code', null, run.taskName)),
        h('td', null, statusBadge(run.status)),
        h('td', null, run.trigger),
        h('td', null, time(run.createdAt)),
        h('td', null, String(run.attempts)),
      ),
    ),
  )
}
