/**
 * The Events table (`GET /__events`): newest first, filtered by name, a page
 * at a time with "Load more", each event with the runs it started and the
 * runs whose wait it met; and the form that sends one (`POST /__events`).
 */
import { MAX_EVENTS_LIMIT } from '../runtime/tasks/event-list.ts'
import { api } from './api.ts'
import { type Child, click, dataTable, fill, h, statusBadge, time } from './dom.ts'
import { pagedList } from './pager.ts'
import { errorView } from './tasks.ts'
import type { EventRow } from './types.ts'

export interface EventsView {
  /** The name filter and the table. */
  element: HTMLElement
  /** The form that sends an event. */
  sendForm: HTMLElement
  refresh(): Promise<void>
}

export function eventsView(openRun: (id: string) => void): EventsView {
  const name = h('input', { id: 'filter-event', name: 'name', type: 'search', placeholder: 'order.paid', spellcheck: 'false' })
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
    render: (events) => table(events, openRun),
  })
  // On Enter, on leaving the field, and when it is cleared.
  name.addEventListener('change', list.restart)
  return {
    element: h('div', null, h('div', { class: 'filters' }, h('label', { for: 'filter-event' }, 'Event name'), name), list.element),
    sendForm: sendForm(() => void list.refresh()),
    refresh: list.refresh,
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

function table(events: EventRow[], openRun: (id: string) => void): HTMLElement {
  if (events.length === 0) return h('p', { class: 'muted' }, 'No events match.')
  const none = () => h('span', { class: 'muted' }, '—')
  const link = (id: string, text: Child) => h('a', { href: `#run/${id}`, title: id, onclick: click(() => openRun(id)) }, text)
  return dataTable(
    ['Time', 'Name', 'Id', 'Runs started', 'Waits resumed'],
    events.map((event) =>
      h(
        'tr',
        { 'data-event': event.id },
        h('td', null, time(event.time)),
        h('td', null, h('code', null, event.name)),
        h('td', null, h('code', null, event.id)),
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

function plural(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? '' : 's'}`
}
