/**
 * A run's updates in its panel (docs/tasks.md "Updates"). While the run is
 * live, a form sends one (`POST /__tasks/runs/<id>/updates/<name>`, the
 * optional id as the `Idempotency-Key` header) and shows the run's answer:
 * its result, the error the server gave, or, past the server's wait, that
 * the update is pending and the same id asks for its answer again. Below
 * it, the updates the run holds (`GET /__tasks/runs/<id>/updates`), newest
 * first, each with its answer. The form keeps what the user typed across
 * the refreshes each run change brings, and starts empty when another run
 * is shown.
 */
import { type MessageForm, messageForm } from './message-form.ts'
import type { UpdateRecord } from '../runtime/types.ts'
import { api } from './api.ts'
import { type Child, dataTable, h, statusBadge, time } from './dom.ts'
import { errorView } from './tasks.ts'
import { FINISHED, type Run } from './types.ts'

/** Updates listed, the newest; a run may hold many. */
const SHOWN = 50
/** Characters of a result shown; the whole of it is the tooltip. */
const RESULT_CHARS = 80

/** What the server answers a send with: 200 once the run answered, 202 while it has not. */
interface SentUpdate {
  id: string
  runId: string
  name: string
  status: 'completed' | 'pending'
  result?: unknown
}

export interface UpdatesView {
  /** Reads the updates of run `id`. It does not throw: a failure is shown in place of the list. */
  load(id: string): Promise<void>
  /** The form while `run` is live, and the list. */
  render(run: Run): Child
}

type Loaded = { runId: string; updates: UpdateRecord[] } | { runId: string; error: unknown }

/** `sent` is called after each send the server answered, a refusal too, so that the run is read again. */
export function updatesView(sent: () => void): UpdatesView {
  let loaded: Loaded | undefined
  let shownRun: string | null = null
  const message: MessageForm = messageForm({
    kind: 'update',
    labels: {
      name: 'Update name',
      data: 'Update data (JSON, optional)',
      id: 'Update id (optional; the same id gets the same answer)',
      send: 'Send update',
    },
    placeholders: { name: 'add-item', data: '{ "sku": "A-1" }' },
    // A refused update is kept with its answer too.
    afterRefusal: true,
    sent,
    async send(runId, name, data, updateId) {
      const done = await api<SentUpdate>(
        'POST',
        `/__tasks/runs/${encodeURIComponent(runId)}/updates/${encodeURIComponent(name)}`,
        data,
        updateId === undefined ? undefined : { 'idempotency-key': updateId },
      )
      if (done.status === 'pending') {
        // The id the server gave is the one to ask again with.
        if (runId === shownRun && message.id.value.trim() === '') message.id.value = done.id
        return [h('code', null, done.name), ' (', h('code', null, done.id), ') is pending; ask again with the same id.']
      }
      const result = 'result' in done ? resultCode(done.result) : h('span', { class: 'muted' }, 'no result')
      return ['Answered ', h('code', null, done.name), ' (', h('code', null, done.id), '): ', result]
    },
  })

  return {
    async load(runId) {
      try {
        const { updates } = await api<{ updates: UpdateRecord[] }>('GET', `/__tasks/runs/${encodeURIComponent(runId)}/updates`)
        loaded = { runId, updates }
      } catch (error) {
        loaded = { runId, error }
      }
    },
    render(run) {
      shownRun = run.id
      message.show(run.id)
      const live = !FINISHED.has(run.status)
      const list = loaded?.runId === run.id ? updateList(loaded) : null
      // A finished run that was sent no update has no section.
      if (!live && !message.said() && loaded?.runId === run.id && 'updates' in loaded && loaded.updates.length === 0) return null
      return [
        live ? [h('h3', null, 'Send an update'), message.form] : null,
        message.problems,
        message.answer,
        h('h3', null, 'Updates'),
        list,
      ]
    },
  }
}

function updateList(loaded: Loaded): Child {
  if ('error' in loaded) return h('div', { role: 'alert', class: 'update-problems' }, errorView(loaded.error))
  const all = loaded.updates
  if (all.length === 0) return h('p', { class: 'muted updates-count' }, 'No update sent.')
  const pending = all.filter((update) => update.status === 'pending').length
  const count = `${all.length.toLocaleString('en-US')} update${all.length === 1 ? '' : 's'}, ${pending.toLocaleString('en-US')} pending${all.length > SHOWN ? `; the newest ${SHOWN} are listed` : ''}.`
  // Oldest first from the server; the newest are what a reader looks for.
  const shown = all.slice(-SHOWN).reverse()
  return [
    h('p', { class: 'muted updates-count' }, count),
    dataTable(
      ['Sent', 'Name', 'Id', 'Status', 'Answered', 'Answer'],
      shown.map((update) =>
        h(
          'tr',
          { 'data-update': update.id },
          h('td', null, time(update.sentAt)),
          h('td', null, h('code', null, update.name)),
          h('td', { class: 'id' }, h('code', null, update.id)),
          h('td', null, statusBadge(update.status)),
          h('td', null, time(update.answeredAt)),
          h('td', { class: 'answer' }, answerCell(update)),
        ),
      ),
      { class: 'updates' },
    ),
  ]
}

/** The result, or the error's code and message, or a dash while the run has not answered. */
function answerCell(update: UpdateRecord): Child {
  if (update.error) return [h('strong', null, update.error.code), ' ', update.error.message]
  if (update.status === 'completed') return 'result' in update ? resultCode(update.result) : h('span', { class: 'muted' }, 'no result')
  return h('span', { class: 'muted' }, '—')
}

/** A result as one line of JSON, cut short, with the whole of it as the tooltip; shown as text, never as markup. */
function resultCode(result: unknown): Child {
  const text = result === undefined ? 'undefined' : JSON.stringify(result)
  return h('code', { title: text }, text.length > RESULT_CHARS ? `${text.slice(0, RESULT_CHARS - 1)}…` : text)
}
