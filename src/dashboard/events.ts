/**
 * The Events table (`GET /__events`): newest first, filtered by name, a page
 * at a time with "Load more", each event with the runs it started and the
 * runs whose wait it met; and the form that sends one (`POST /__events`).
 * The list carries each event's size, not its data: the data is read
 * (`GET /__events/<id>`) when the user opens it, so refreshing the list on
 * run changes stays cheap however large the events are.
 */
import { MAX_EVENTS_LIMIT } from '../runtime/tasks/store/event-list.ts'
import { api } from './api.ts'
import { type Child, click, dataTable, fill, h, statusBadge, time } from './dom.ts'
import { jsonView } from './json.ts'
import { pagedList } from './pager.ts'
import { errorView } from './tasks.ts'
import { throttle } from './throttle.ts'
import type { EventRow } from './types.ts'

/** The list is read again at most this often on run changes, however many arrive. */
const CHANGE_REFRESH_MS = 1000

export interface EventsView {
  /** The name filter and the table. */
  element: HTMLElement
  /** The form that sends an event. */
  sendForm: HTMLElement
  refresh(): Promise<void>
  /** Runs changed: the list is read again, at most once a second. */
  changed(): void
}

export function eventsView(openRun: (id: string) => void): EventsView {
  const name = h('input', { id: 'filter-event', name: 'name', type: 'search', placeholder: 'order.paid', spellcheck: 'false' })
  // An event's data never changes once sent: what the user opened stays shown across refreshes without being read again.
  const opened = new Map<string, unknown>()
  const list = pagedList<EventRow>({
    page: 50,
    maxLimit: MAX_EVENTS_LIMIT,
    attribute: 'data-event',
    async fetch(limit, cursor) {
      const query = new URLSearchParams({ limit: String(limit) })
      if (name.value.trim()) query.set('name', name.value.trim())
      if (cursor) query.set('cursor', cursor)
      const page = await api<{ events: EventRow[]; cursor?: string }>('GET', `/__events?${query}`)
      return { items: page.events, cursor: page.cursor }
    },
    render: (events) => table(events, openRun, opened),
  })
  // On Enter, on leaving the field, and when it is cleared.
  name.addEventListener('change', list.restart)
  return {
    element: h('div', null, h('div', { class: 'filters' }, h('label', { for: 'filter-event' }, 'Event name'), name), list.element),
    sendForm: sendForm(() => void list.refresh()),
    refresh: list.refresh,
    changed: throttle(list.refresh, CHANGE_REFRESH_MS),
  }
}

/** The form: a name, JSON data and an optional id, and what the send did or why it was refused. */
function sendForm(sent: () => void): HTMLElement {
  const name = h('input', { id: 'send-name', name: 'name', required: true, spellcheck: 'false', placeholder: 'order.paid' })
  const data = h('textarea', { id: 'send-data', name: 'data', rows: 4, spellcheck: 'false', placeholder: '{ "orderId": "42" }' })
  const id = h('input', { id: 'send-id', name: 'id', spellcheck: 'false' })
  const problems = h('div', { role: 'alert', class: 'problems' })
  const answer = h('p', { role: 'status', class: 'muted' })
  const submit = async (event: Event) => {
    event.preventDefault()
    fill(problems)
    fill(answer)
    const input: { name: string; data?: unknown; id?: string } = { name: name.value.trim() }
    try {
      if (data.value.trim() !== '') input.data = JSON.parse(data.value)
    } catch (error) {
      fill(problems, h('p', null, `The data is not JSON: ${(error as Error).message}`))
      return
    }
    if (id.value.trim() !== '') input.id = id.value.trim()
    try {
      const { events } = await api<{ events: { id: string; runs: unknown[]; resumed: string[] }[] }>('POST', '/__events', [input])
      const [done] = events
      fill(
        answer,
        'Sent ',
        h('code', null, done.id),
        `: ${plural(done.runs.length, 'run')} started, ${plural(done.resumed.length, 'wait')} resumed.`,
      )
      sent()
    } catch (error) {
      fill(problems, errorView(error))
    }
  }
  return h(
    'form',
    { onsubmit: submit, class: 'send' },
    h('label', { for: 'send-name' }, 'Name'),
    name,
    h('label', { for: 'send-data' }, 'Data (JSON, optional)'),
    data,
    h('label', { for: 'send-id' }, 'Id (optional)'),
    id,
    h('div', null, h('button', { type: 'submit' }, 'Send')),
    problems,
    answer,
  )
}

function table(events: EventRow[], openRun: (id: string) => void, opened: Map<string, unknown>): HTMLElement {
  if (events.length === 0) return h('p', { class: 'muted' }, 'No events match.')
  const none = () => h('span', { class: 'muted' }, '—')
  const link = (id: string, text: Child) => h('a', { href: `#run/${id}`, title: id, onclick: click(() => openRun(id)) }, text)
  return dataTable(
    ['Time', 'Name', 'Id', 'Data', 'Runs started', 'Waits resumed'],
    events.map((event) =>
      h(
        'tr',
        { 'data-event': event.id },
        h('td', null, time(event.time)),
        h('td', null, h('code', null, event.name)),
        h('td', null, h('code', null, event.id)),
        h('td', { class: 'data' }, dataCell(event, opened)),
        h(
          'td',
          { class: 'effects' },
          event.runs.length ? event.runs.map((run) => h('span', null, statusBadge(run.status), ' ', link(run.id, run.taskName))) : none(),
        ),
        // The first part of each id, as the Tasks table shows a last run.
        h('td', { class: 'effects' }, event.resumed.length ? event.resumed.map((id) => link(id, id.slice(0, 8))) : none()),
      ),
    ),
  )
}

/** The event's data once opened; until then its size and a button that reads it. */
function dataCell(event: EventRow, opened: Map<string, unknown>): Child {
  if (event.size === 0) return h('span', { class: 'muted' }, 'none')
  if (opened.has(event.id)) return jsonView(opened.get(event.id))
  const cell = h('div')
  const open = async () => {
    fill(cell, h('span', { class: 'muted' }, 'Loading…'))
    try {
      const { data } = await api<{ data?: unknown }>('GET', `/__events/${encodeURIComponent(event.id)}`)
      opened.set(event.id, data)
      fill(cell, jsonView(data))
    } catch (error) {
      fill(cell, h('div', { role: 'alert' }, errorView(error)), button())
    }
  }
  const button = () => h('button', { type: 'button', class: 'show-data', onclick: () => void open() }, `Show data (${bytes(event.size)})`)
  fill(cell, button())
  return cell
}

/** A size as people read it: bytes, kB or MB (powers of 1000). */
function bytes(size: number): string {
  if (size < 1000) return `${size} B`
  if (size < 1_000_000) return `${(size / 1000).toFixed(1)} kB`
  return `${(size / 1_000_000).toFixed(1)} MB`
}

function plural(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? '' : 's'}`
}
