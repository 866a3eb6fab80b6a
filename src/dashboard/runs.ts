/**
 * The Runs table: filtered by task, version, statuses, tags, a metadata key
 * and when runs were created (filters.ts), newest first, a page at a time
 * with "Load more", and refreshed when the event stream says a run changed.
 * Above it, while a filter is set, the bar that cancels or replays every
 * run the filters find (bulk.ts).
 */
import { MAX_RUNS_LIMIT } from '../runtime/admin/runs-query.ts'
import { api } from './api.ts'
import { bulkBar } from './bulk.ts'
import { type Child, click, dataTable, fill, h, statusBadge, tagChips, time } from './dom.ts'
import { filterQuery, runFilters } from './filters.ts'
import { pagedList } from './pager.ts'
import type { RunRow } from './types.ts'

export interface RunsView {
  element: HTMLElement
  /** Keeps the task filter's choices in step with the app's tasks. */
  setTasks(names: string[]): void
  refresh(): Promise<void>
}

export function runsView(openRun: (id: string) => void): RunsView {
  const filters = runFilters(() => {
    bulk.update()
    list.restart()
  })
  const list = pagedList<RunRow>({
    page: 100,
    maxLimit: MAX_RUNS_LIMIT,
    attribute: 'data-run',
    async fetch(limit, cursor) {
      const query = filterQuery(filters.read())
      query.set('limit', String(limit))
      if (cursor) query.set('cursor', cursor)
      const page = await api<{ runs: RunRow[]; cursor?: string }>('GET', `/__tasks/runs?${query}`)
      return { items: page.runs, cursor: page.cursor }
    },
    render: (runs) => table(runs, openRun),
  })
  const bulk = bulkBar(filters, () => void list.refresh())
  const { task } = filters

  return {
    element: h('div', null, filters.element, bulk.element, list.element),
    setTasks(names) {
      const chosen = task.value
      fill(
        task,
        h('option', { value: '' }, 'All tasks'),
        names.map((name) => h('option', { value: name }, name)),
      )
      task.value = names.includes(chosen) ? chosen : ''
      bulk.update()
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
        h('td', null, h('code', null, run.taskName), tagChips(run.tags)),
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
