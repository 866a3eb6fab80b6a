/** The Runs table, filtered by task and status, refreshed when the event stream says a run changed. */
import { api } from './api.ts'
import { click, dataTable, fill, h, statusBadge, time } from './dom.ts'
import { errorView } from './tasks.ts'
import { STATUSES, type RunRow } from './types.ts'

export interface RunsView {
  element: HTMLElement
  /** Keeps the task filter's choices in step with the app's tasks. */
  setTasks(names: string[]): void
  refresh(): Promise<void>
}

export function runsView(openRun: (id: string) => void): RunsView {
  const task = h('select', { id: 'filter-task', name: 'task' }, h('option', { value: '' }, 'All tasks'))
  const status = h(
    'select',
    { id: 'filter-status', name: 'status' },
    h('option', { value: '' }, 'Any status'),
    STATUSES.map((s) => h('option', { value: s }, s)),
  )
  const body = h('div', { class: 'runs' })
  const refresh = async () => {
    const query = new URLSearchParams({ limit: '100' })
    if (task.value) query.set('task', task.value)
    if (status.value) query.set('status', status.value)
    try {
      const { runs } = await api<{ runs: RunRow[] }>('GET', `/__tasks/runs?${query}`)
      fill(body, table(runs, openRun))
    } catch (error) {
      fill(body, h('div', { role: 'alert' }, errorView(error)))
    }
  }
  task.addEventListener('change', refresh)
  status.addEventListener('change', refresh)
  return {
    element: h(
      'div',
      null,
      h(
        'div',
        { class: 'filters' },
        h('label', { for: 'filter-task' }, 'Task'),
        task,
        h('label', { for: 'filter-status' }, 'Status'),
        status,
      ),
      body,
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
