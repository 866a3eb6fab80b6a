/**
 * A run's signals in its panel. While the run is live, a form sends one
 * (`POST /__tasks/runs/<id>/signals/<name>`, the optional id as the
 * `Idempotency-Key` header), its name filled in with the signal the run
 * waits for. Below it, the signals the run holds (`GET
 * /__tasks/runs/<id>/signals`), newest first, each with the step whose wait
 * took it. The form keeps what the user typed across the refreshes each run
 * change brings, and starts empty when another run is shown.
 */
import { messageForm } from './message-form.ts'
import type { SentSignal, SignalRecord } from '../runtime/types.ts'
import { api } from './api.ts'
import { type Child, dataTable, h, time } from './dom.ts'
import { errorView } from './tasks.ts'
import { FINISHED, type Run } from './types.ts'

/** Signals listed: a run may hold a thousand that no wait took, and any number that were taken. */
const SHOWN = 50
/** Characters of a signal's data shown in the list; the whole of it is the cell's tooltip. */
const DATA_CHARS = 60

export interface SignalsView {
  /** Reads the signals of run `id`. It does not throw: a failure is shown in place of the list. */
  load(id: string): Promise<void>
  /** The form while `run` is live, and the list. */
  render(run: Run): Child
}

type Loaded = { runId: string; signals: SignalRecord[] } | { runId: string; error: unknown }

/** `sent` is called after each send the server answered, so that the run is read again. */
export function signalsView(sent: () => void): SignalsView {
  let loaded: Loaded | undefined
  let shownRun: string | null = null
  // The name the run waited for when last drawn: the field follows it unless the user changed the field.
  let awaited = ''
  const message = messageForm({
    kind: 'signal',
    labels: {
      name: 'Signal name',
      data: 'Signal data (JSON, optional)',
      id: 'Signal id (optional; the same id is kept once)',
      send: 'Send signal',
    },
    placeholders: { name: 'approval', data: '{ "ok": true }' },
    sent,
    async send(runId, name, data, signalId) {
      const done = await api<SentSignal>(
        'POST',
        `/__tasks/runs/${encodeURIComponent(runId)}/signals/${encodeURIComponent(name)}`,
        data,
        signalId === undefined ? undefined : { 'idempotency-key': signalId },
      )
      return done.duplicate
        ? ['Already sent: the run keeps it once (', h('code', null, done.id), ').']
        : ['Sent ', h('code', null, done.name), ' as ', h('code', null, done.id), '.']
    },
  })

  return {
    async load(runId) {
      try {
        const { signals } = await api<{ signals: SignalRecord[] }>('GET', `/__tasks/runs/${encodeURIComponent(runId)}/signals`)
        loaded = { runId, signals }
      } catch (error) {
        loaded = { runId, error }
      }
    },
    render(run) {
      if (run.id !== shownRun) {
        shownRun = run.id
        awaited = ''
        message.show(run.id)
      }
      const { name } = message
      const wait = run.suspended?.waitpoint
      const waitsFor = wait?.type === 'signal' ? wait.signal : ''
      if (waitsFor !== '' && name.value === awaited) name.value = waitsFor
      if (waitsFor !== '') awaited = waitsFor
      const live = !FINISHED.has(run.status)
      const list = loaded?.runId === run.id ? signalList(run.id, loaded) : null
      // The answer sits outside the form: a signal the run waited for often ends the run, and the form goes with it.
      // A finished run that was sent nothing has no section.
      if (!live && !message.said() && loaded?.runId === run.id && 'signals' in loaded && loaded.signals.length === 0) return null
      return [
        live ? [h('h3', null, 'Send a signal'), message.form] : null,
        message.problems,
        message.answer,
        h('h3', null, 'Signals'),
        list,
      ]
    },
  }
}

function signalList(runId: string, loaded: Loaded): Child {
  if ('error' in loaded) return h('div', { role: 'alert', class: 'signal-problems' }, errorView(loaded.error))
  const all = loaded.signals
  if (all.length === 0) return h('p', { class: 'muted signals-count' }, 'No signal sent.')
  const waiting = all.filter((signal) => signal.takenBy === undefined).length
  const count = `${plural(all.length, 'signal')}, ${number(waiting)} waiting to be read${all.length > SHOWN ? `; the newest ${SHOWN} are listed` : ''}.`
  // Oldest first from the server; the newest are what a reader looks for.
  const shown = all.slice(-SHOWN).reverse()
  return [
    h('p', { class: 'muted signals-count' }, count),
    dataTable(
      ['Sent', 'Name', 'Id', 'Data', 'Taken by'],
      shown.map((signal) =>
        h(
          'tr',
          { 'data-signal': signal.id },
          h('td', null, time(signal.sentAt)),
          h('td', null, h('code', null, signal.name)),
          h('td', { class: 'id' }, h('code', null, signal.id)),
          h('td', { class: 'data' }, dataCell(signal)),
          h(
            'td',
            { class: 'taken-by' },
            signal.takenBy === undefined
              ? h('span', { class: 'muted' }, 'waiting to be read')
              : ['step ', h('code', null, stepOf(signal.takenBy, runId))],
          ),
        ),
      ),
      { class: 'signals' },
    ),
  ]
}

/** The data as one line of JSON, cut short, with the whole of it as the tooltip. */
function dataCell(signal: SignalRecord): Child {
  if (signal.data === undefined) return h('span', { class: 'muted' }, 'none')
  const text = JSON.stringify(signal.data)
  return h('code', { title: text }, text.length > DATA_CHARS ? `${text.slice(0, DATA_CHARS - 1)}…` : text)
}

/** The step key in a wait's token, `<runId>:<stepKey>:signal`; a step key may itself hold colons. */
function stepOf(token: string, runId: string): string {
  const prefix = `${runId}:`
  const suffix = ':signal'
  if (token.startsWith(prefix) && token.endsWith(suffix) && token.length > prefix.length + suffix.length)
    return token.slice(prefix.length, -suffix.length)
  return token
}

function plural(count: number, noun: string): string {
  return `${number(count)} ${noun}${count === 1 ? '' : 's'}`
}

function number(n: number): string {
  return n.toLocaleString('en-US')
}
