/** The Tasks table and the Trigger form. */
import { ApiError, api } from './api.ts'
import { type Child, click, dataTable, duration, fill, h, statusBadge, time } from './dom.ts'
import type { DashboardTask } from './types.ts'

/**
 * The Tasks table. A scheduled task's "Fire now" starts a run as a tick of its
 * schedule would, opens it, and shows a refusal in `problems`, which outlives
 * the table: the table is drawn again on every event.
 */
export function tasksTable(tasks: DashboardTask[], openRun: (id: string) => void, problems: HTMLElement): Child {
  if (tasks.length === 0) return h('p', { class: 'muted' }, 'This app has no task routes.')
  const fire = async (name: string) => {
    fill(problems)
    try {
      openRun((await api<{ id: string }>('POST', `/__tasks/${encodeURIComponent(name)}/fire`)).id)
    } catch (error) {
      fill(problems, errorView(error))
    }
  }
  return dataTable(
    ['Task', 'Runs on', 'Next run', 'Retries', 'Timeout', 'Last run'],
    tasks.map((task) =>
      h(
        'tr',
        null,
        h('th', { scope: 'row' }, h('code', null, task.name)),
        h(
          'td',
          null,
          task.schedule || task.events.length
            ? [
                task.schedule
                  ? [h('code', null, task.schedule), task.timezone && task.timezone !== 'UTC' ? ` (${task.timezone})` : '']
                  : null,
                task.schedule && task.events.length ? h('br') : null,
                task.events.length
                  ? ['event ', task.events.map((name, i) => [i ? ', ' : '', h('code', { class: 'event-name' }, name)])]
                  : null,
              ]
            : h('span', { class: 'muted' }, 'on demand'),
        ),
        h(
          'td',
          null,
          task.schedule
            ? [time(task.nextRunAt), ' ', h('button', { type: 'button', class: 'fire', onclick: () => fire(task.name) }, 'Fire now')]
            : h('span', { class: 'muted' }, '—'),
        ),
        h('td', null, String(task.retries)),
        h('td', null, duration(task.timeout)),
        h(
          'td',
          null,
          task.lastRun
            ? [
                statusBadge(task.lastRun.status),
                ' ',
                // The first part of the id, enough to tell runs apart here; the Runs table shows it whole.
                h(
                  'a',
                  { href: `#run/${task.lastRun.id}`, title: task.lastRun.id, onclick: click(() => openRun(task.lastRun!.id)) },
                  task.lastRun.id.slice(0, 8),
                ),
              ]
            : h('span', { class: 'muted' }, 'never'),
        ),
      ),
    ),
  )
}

/** The Trigger form: a task, a JSON input, and the errors of the last attempt to start it. */
export function triggerForm(tasks: DashboardTask[], started: (id: string) => void): HTMLElement {
  const select = h(
    'select',
    { id: 'trigger-task', name: 'task' },
    tasks.map((task) => h('option', { value: task.name }, task.name)),
  )
  const input = h('textarea', { id: 'trigger-input', name: 'input', rows: 5, spellcheck: 'false', value: '{}' })
  const problems = h('div', { role: 'alert', class: 'problems' })
  const submit = async (event: Event) => {
    event.preventDefault()
    fill(problems)
    let value: unknown
    try {
      value = input.value.trim() === '' ? undefined : JSON.parse(input.value)
    } catch (error) {
      fill(problems, h('p', null, `The input is not JSON: ${(error as Error).message}`))
      return
    }
    try {
      const run = await api<{ id: string }>('POST', `/__tasks/${encodeURIComponent(select.value)}`, value ?? null)
      started(run.id)
    } catch (error) {
      fill(problems, errorView(error))
    }
  }
  return h(
    'form',
    { onsubmit: submit, class: 'trigger' },
    h('label', { for: 'trigger-task' }, 'Task'),
    select,
    h('label', { for: 'trigger-input' }, 'Input (JSON)'),
    input,
    h('div', null, h('button', { type: 'submit', disabled: tasks.length === 0 }, 'Trigger')),
    problems,
  )
}

/** An error answer: its code and message, and each validation detail as `target.path: message`. */
export function errorView(error: unknown): Child {
  if (!(error instanceof ApiError)) return h('p', null, String((error as Error)?.message ?? error))
  return [
    h('p', null, h('strong', null, error.code), ' ', error.message),
    error.details.length
      ? h(
          'ul',
          { class: 'details' },
          error.details.map((detail) =>
            h(
              'li',
              null,
              h('code', null, [detail.target, ...(detail.path ?? [])].filter((p) => p !== undefined).join('.')),
              ': ',
              detail.message,
            ),
          ),
        )
      : null,
  ]
}
