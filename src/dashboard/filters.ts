/**
 * The filters of the Runs table: task, version, statuses, tags, one
 * metadata key and the creation window. Read as one `RunFilter`, which the
 * runs list sends as its query and the bulk bar as its `filter`.
 */
import type { RunFilter } from '../runtime/admin/bulk-runs.ts'
import { h } from './dom.ts'
import { STATUSES } from './types.ts'

export type { RunFilter }

export interface RunFilters {
  element: HTMLElement
  /** The filter set now; throws, naming the fix, when a field cannot be read. */
  read(): RunFilter
  /** Whether any filter is set, read or not. */
  any(): boolean
  /** The select of tasks, whose choices follow the app's tasks. */
  task: HTMLSelectElement
}

export function runFilters(changed: () => void): RunFilters {
  const task = h('select', { id: 'filter-task', name: 'task' }, h('option', { value: '' }, 'All tasks'))
  const version = h('input', { id: 'filter-version', name: 'version', type: 'search', placeholder: 'v1', spellcheck: 'false' })
  const statuses = STATUSES.map((value) => h('input', { type: 'checkbox', name: 'status', value }))
  const tags = h('input', { id: 'filter-tag', name: 'tag', type: 'search', placeholder: 'tenant:acme, vip', spellcheck: 'false' })
  const metadata = h('input', { id: 'filter-metadata', name: 'metadata', type: 'search', placeholder: 'stage=sent', spellcheck: 'false' })
  const from = h('input', { id: 'filter-from', name: 'from', type: 'datetime-local' })
  const to = h('input', { id: 'filter-to', name: 'to', type: 'datetime-local' })
  const texts = [version, tags, metadata, from, to]

  task.addEventListener('change', changed)
  // Text fields apply on Enter, on leaving the field, and when cleared.
  for (const input of texts) input.addEventListener('change', changed)
  for (const box of statuses) box.addEventListener('change', changed)

  // A label and its control wrap as one.
  const field = (id: string, label: string, control: HTMLElement) => h('span', { class: 'field' }, h('label', { for: id }, label), control)
  const element = h(
    'div',
    { class: 'filters' },
    field('filter-task', 'Task', task),
    field('filter-version', 'Version', version),
    h(
      'fieldset',
      null,
      h('legend', null, 'Status'),
      statuses.map((box) => h('label', null, box, box.value)),
    ),
    field('filter-tag', 'Tags', tags),
    field('filter-metadata', 'Metadata', metadata),
    field('filter-from', 'Created from', from),
    field('filter-to', 'Created to', to),
  )

  return {
    element,
    task,
    any: () => task.value !== '' || statuses.some((box) => box.checked) || texts.some((input) => input.value.trim() !== ''),
    read() {
      const filter: RunFilter = {}
      if (task.value) filter.task = task.value
      const checked = statuses.filter((box) => box.checked).map((box) => box.value)
      if (checked.length > 0) filter.status = checked
      if (version.value.trim()) filter.version = version.value.trim()
      const tagList = tags.value
        .split(',')
        .map((tag) => tag.trim())
        .filter((tag) => tag !== '')
      if (tagList.length > 0) filter.tag = tagList
      const pair = metadata.value.trim()
      if (pair) filter.metadata = metadataPair(pair)
      if (from.value) filter.from = instant(from.value, 'Created from')
      if (to.value) filter.to = instant(to.value, 'Created to')
      return filter
    },
  }
}

/** `key=value`: the value is the rest after the first `=`. */
function metadataPair(text: string): Record<string, string> {
  const at = text.indexOf('=')
  const key = at < 0 ? '' : text.slice(0, at).trim()
  if (key === '') throw new Error(`Write the metadata filter as key=value, such as stage=sent (got "${text}")`)
  return { [key]: text.slice(at + 1).trim() }
}

/** A datetime-local value (the viewer's local time) as an ISO instant. */
function instant(value: string, label: string): string {
  const date = new Date(value)
  if (Number.isNaN(date.getTime())) throw new Error(`${label} must be a date and time (got "${value}")`)
  return date.toISOString()
}

/** The filter as the query of `GET /__tasks/runs`. */
export function filterQuery(filter: RunFilter): URLSearchParams {
  const query = new URLSearchParams()
  if (filter.task) query.set('task', filter.task)
  for (const status of filter.status ?? []) query.append('status', status)
  if (filter.version) query.set('version', filter.version)
  for (const tag of filter.tag ?? []) query.append('tag', tag)
  for (const [key, value] of Object.entries(filter.metadata ?? {})) query.set(`metadata.${key}`, value)
  if (filter.from) query.set('from', filter.from)
  if (filter.to) query.set('to', filter.to)
  return query
}
