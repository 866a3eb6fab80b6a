/**
 * The Runs table: filtered by task, by version and by any number of
 * statuses, newest first, a page at a time with "Load more", and refreshed when the event
 * stream says a run changed.
 */
import { MAX_RUNS_LIMIT } from '../runtime/admin/runs-query.ts'
import { api } from './api.ts'
import { type Child, click, dataTable, fill, h, statusBadge, time } from './dom.ts'
import { pagedList } from './pager.ts'
import { type RunRow, STATUSES } from './types.ts'

export interface RunsView {
  element: HTMLElement
  /** Keeps the task filter's choices in step with the app's tasks. */
  setTasks(names: string[]): void
  refresh(): Promise<void>
}

export function runsView(openRun: (id: string) => void): RunsView {
  const task = h('select', { id: 'filter-task', name: 'task' }, h('option', { value: '' }, 'All tasks'))
  const version = h('input', { id: 'filter-version', name: 'version', type: 'search', placeholder: 'v1', spellcheck: 'false' })
  const statuses = STATUSES.map((value) => h('input', { type: 'checkbox', name: 'status', value }))
  const list = pagedList<RunRow>({
    page: 100,
    maxLimit: MAX_RUNS_LIMIT,
    attribute: 'data-run',
    async fetch(limit, cursor) {
      const query = new URLSearchParams({ limit: String(limit) })
      if (task.value) query.set('task', task.value)
      if (version.value.trim()) query.set('version', version.value.trim())
      for (const box of statuses) if (box.checked) query.append('status', box.value)
      if (cursor) query.set('cursor', cursor)
      const page = await api<{ runs: RunRow[]; cursor?: string }>('GET', `/__tasks/runs?${query}`)
      return { items: page.runs, cursor: page.cursor }
    },
    render: (runs) => table(runs, openRun),
  })
  task.addEventListener('change', list.restart)
  // On Enter, on leaving the field, and when it is cleared.
  version.addEventListener('change', list.restart)
  for (const box of statuses) box.addEventListener('change', list.restart)

  return {
    element: h(
      'div',
      null,
      h(
        'div',
        { class: 'filters' },
        h('label', { for: 'filter-task' }, 'Task'),
        task,
        h('label', { for: 'filter-version' }, 'Version'),
        version,
        h(
          'fieldset',
          null,
          h('legend', null, 'Status'),
          statuses.map((box) => h('label', null, box, box.value)),
        ),
      ),
      list.element,
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
    refresh: list.refresh,
  }
}

function table(runs: RunRow[], openRun: (id: string) => void): HTMLElement {
  if (runs.length === 0) return h('p', { class: 'muted' }, 'No runs match.')
  return dataTable(
    ['Run', 'Task', 'Version', 'Status', 'Trigger', 'Created', 'Attempts'],
    runs.map((run) =>
      h(
        'tr',
        { 'data-run': run.id },
        h('td', null, h('a', { href: `#run/${run.id}`, onclick: click(() => openRun(run.id)) }, run.id)),
        h('td', null, h('code', null, run.taskName)),
        h('td', null, versionCell(run.version)),
        h('td', null, statusBadge(run.status)),
        h('td', null, run.trigger),
        h('td', null, time(run.createdAt)),
        h('td', null, String(run.attempts)),
      ),
    ),
  )
}

/** A long version is cut by the stylesheet, and whole in its tooltip. */
function versionCell(version: string | undefined): Child {
  return version ? h('code', { class: 'version', title: version }, version) : h('span', { class: 'muted' }, '—')
}
