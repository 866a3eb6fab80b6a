/**
 * Runtime schedules (`/__tasks/schedules`): a table of them with their next
 * tick and last run, the actions on each (pause or resume, run now,
 * delete), and the form that makes one. A server that keeps none (501
 * `SCHEDULES_UNSUPPORTED`) says so instead.
 */
import type { ScheduleRecord } from '../runtime/types.ts'
import { ApiError, api } from './api.ts'
import { type Child, click, dataTable, fill, h, time } from './dom.ts'
import { errorView } from './tasks.ts'

export interface SchedulesView {
  /** The table, and what an action on it answered. */
  element: HTMLElement
  /** The form that makes a schedule. */
  form: HTMLElement
  refresh(): Promise<void>
  /** The tasks a schedule may run, for the form's list. */
  setTasks(names: readonly string[]): void
}

export function schedulesView(openRun: (id: string) => void): SchedulesView {
  const list = h('div')
  const problems = h('div', { role: 'alert', class: 'problems' })
  const element = h('div', null, list, problems)

  const act = async (fn: () => Promise<unknown>) => {
    fill(problems)
    try {
      await fn()
    } catch (error) {
      fill(problems, errorView(error))
    }
    await refresh()
  }

  async function refresh(): Promise<void> {
    try {
      const { schedules } = await api<{ schedules: ScheduleRecord[] }>('GET', '/__tasks/schedules')
      fill(list, schedules.length === 0 ? h('p', { class: 'muted' }, 'No schedules yet: make one below.') : table(schedules, openRun, act))
    } catch (error) {
      const unsupported = error instanceof ApiError && error.status === 501
      fill(list, unsupported ? h('p', { class: 'muted' }, 'This server keeps no runtime schedules.') : errorView(error))
      form.hidden = unsupported
    }
  }

  const { form, setTasks } = makeForm(refresh)
  return { element, form, refresh, setTasks }
}

type Act = (fn: () => Promise<unknown>) => Promise<void>

function table(schedules: ScheduleRecord[], openRun: (id: string) => void, act: Act): HTMLTableElement {
  const path = (id: string, action = '') => `/__tasks/schedules/${encodeURIComponent(id)}${action}`
  return dataTable(
    ['Task', 'Cron', 'Time zone', 'Key', 'Next tick', 'Last run', 'Actions'],
    schedules.map((schedule) =>
      h(
        'tr',
        { 'data-schedule': schedule.id },
        h('th', { scope: 'row' }, h('code', null, schedule.task)),
        h('td', null, h('code', null, schedule.cron)),
        h('td', null, schedule.timezone ?? 'UTC'),
        h('td', null, schedule.key ?? h('span', { class: 'muted' }, '—')),
        h('td', null, schedule.enabled ? time(schedule.nextAt) : h('span', { class: 'muted' }, 'paused')),
        h('td', null, lastRun(schedule, openRun)),
        h(
          'td',
          { class: 'actions' },
          button(schedule.enabled ? 'Pause' : 'Resume', () =>
            act(() => api('POST', path(schedule.id, schedule.enabled ? '/pause' : '/resume'))),
          ),
          button('Run now', () => act(async () => openRun((await api<{ runId: string }>('POST', path(schedule.id, '/trigger'))).runId))),
          button('Delete', () => act(() => api('DELETE', path(schedule.id))), 'danger'),
        ),
      ),
    ),
    { class: 'schedules' },
  )
}

function lastRun(schedule: ScheduleRecord, openRun: (id: string) => void): Child {
  const id = schedule.lastRunId
  if (id === undefined) return h('span', { class: 'muted' }, '—')
  return h('a', { href: `#run/${id}`, onclick: click(() => openRun(id)) }, time(schedule.lastTick))
}

function button(label: string, onclick: () => void, kind?: string): HTMLButtonElement {
  return h('button', { type: 'button', class: kind ? `small ${kind}` : 'small', onclick }, label)
}

/** The form: a task, a cron, a zone, a JSON input and a key; what it made is shown by the table. */
function makeForm(made: () => Promise<void>): { form: HTMLElement; setTasks(names: readonly string[]): void } {
  const task = h('select', { id: 'schedule-task', name: 'task', required: true })
  const cron = h('input', { id: 'schedule-cron', name: 'cron', required: true, spellcheck: 'false', placeholder: '0 9 * * 1' })
  const timezone = h('input', { id: 'schedule-timezone', name: 'timezone', spellcheck: 'false', placeholder: 'UTC' })
  const input = h('textarea', { id: 'schedule-input', name: 'input', rows: 3, spellcheck: 'false', placeholder: '{ "tenant": "acme" }' })
  const key = h('input', { id: 'schedule-key', name: 'key', spellcheck: 'false', placeholder: 'acme' })
  const problems = h('div', { role: 'alert', class: 'problems' })
  const submit = async (event: Event) => {
    event.preventDefault()
    fill(problems)
    const body: Record<string, unknown> = { cron: cron.value.trim() }
    if (timezone.value.trim() !== '') body.timezone = timezone.value.trim()
    if (key.value.trim() !== '') body.key = key.value.trim()
    try {
      if (input.value.trim() !== '') body.input = JSON.parse(input.value)
    } catch (error) {
      fill(problems, h('p', null, `The input is not JSON: ${(error as Error).message}`))
      return
    }
    try {
      await api<ScheduleRecord>('POST', `/__tasks/${encodeURIComponent(task.value)}/schedules`, body)
    } catch (error) {
      fill(problems, errorView(error))
      return
    }
    await made()
  }
  const field = (id: string, label: string, control: HTMLElement) => [h('label', { for: id }, label), control]
  const form = h(
    'form',
    { class: 'schedule', onsubmit: submit },
    field('schedule-task', 'Task', task),
    field('schedule-cron', 'Cron', cron),
    field('schedule-timezone', 'Time zone', timezone),
    field('schedule-input', 'Payload of each run (JSON)', input),
    field('schedule-key', 'Key', key),
    h('div', null, h('button', { type: 'submit' }, 'Make schedule')),
    problems,
  )
  return {
    form,
    setTasks(names) {
      const chosen = task.value
      fill(
        task,
        names.map((name) => h('option', { value: name, selected: name === chosen }, name)),
      )
    },
  }
}
