/**
 * The runs dashboard. Nothing is fetched into the page until the admin
 * surface lets the user in: on loopback in development, else with the task
 * secret the user enters here.
 */
import { ApiError, api, secret, watchEvents } from './api.ts'
import { chartsView } from './charts.ts'
import { fill, h } from './dom.ts'
import { runView } from './run.ts'
import { runsView } from './runs.ts'
import { errorView, tasksTable, triggerForm } from './tasks.ts'
import { eventsView } from './events.ts'
import { schedulesView } from './schedules.ts'
import type { DashboardTask } from './types.ts'

const root = document.getElementById('app')!
const live = document.getElementById('live')!
const signOut = document.getElementById('sign-out') as HTMLButtonElement
let stopEvents: AbortController | undefined

const runs = runsView((id) => openRun(id))
const events = eventsView((id) => openRun(id))
const charts = chartsView()
const schedules = schedulesView((id) => openRun(id))
const run = runView(
  (id) => openRun(id),
  () => refreshSoon(),
)
const tasksSection = h('div')
const tasksProblems = h('div', { role: 'alert', class: 'problems' })
const triggerSection = h('div')

function openRun(id: string): void {
  if (location.hash !== `#run/${id}`) history.replaceState(null, '', `#run/${id}`)
  void run.show(id)
  void runs.refresh()
}

async function loadTasks(): Promise<DashboardTask[]> {
  const { tasks } = await api<{ tasks: DashboardTask[] }>('GET', '/__svc/dashboard/tasks')
  fill(tasksSection, tasksTable(tasks, openRun, tasksProblems))
  runs.setTasks(tasks.map((task) => task.name))
  charts.setTasks(tasks.map((task) => task.name))
  schedules.setTasks(tasks.map((task) => task.name))
  return tasks
}

// Every event refreshes what is on screen; events that arrive together share one refresh.
let pending = false
function refreshSoon(): void {
  if (pending) return
  pending = true
  setTimeout(() => {
    pending = false
    // The events list is the one view whose reads grow with what it shows: it is read again at most once a second.
    events.changed()
    void Promise.all([loadTasks().catch(() => undefined), runs.refresh(), run.refresh(), charts.refresh(), schedules.refresh()])
  }, 50)
}

async function start(): Promise<void> {
  let tasks: DashboardTask[]
  try {
    tasks = await loadTasks()
  } catch (error) {
    if (error instanceof ApiError && error.status === 401) return gate(secret.get() ? error : undefined)
    fill(root, h('div', { role: 'alert' }, errorView(error)))
    return
  }
  signOut.hidden = !secret.get()
  fill(
    root,
    h('section', { 'aria-labelledby': 'tasks-heading' }, h('h2', { id: 'tasks-heading' }, 'Tasks'), tasksSection, tasksProblems),
    h('section', { 'aria-labelledby': 'trigger-heading' }, h('h2', { id: 'trigger-heading' }, 'Trigger a run'), triggerSection),
    h('section', { 'aria-labelledby': 'charts-heading' }, h('h2', { id: 'charts-heading' }, 'Task charts'), charts.element),
    h('section', { 'aria-labelledby': 'runs-heading' }, h('h2', { id: 'runs-heading' }, 'Runs'), runs.element),
    h(
      'section',
      { 'aria-labelledby': 'schedules-heading' },
      h('h2', { id: 'schedules-heading' }, 'Schedules'),
      schedules.element,
      schedules.form,
    ),
    h('section', { 'aria-labelledby': 'events-heading' }, h('h2', { id: 'events-heading' }, 'Events'), events.element),
    h('section', { 'aria-labelledby': 'send-heading' }, h('h2', { id: 'send-heading' }, 'Send an event'), events.sendForm),
    run.element,
  )
  fill(triggerSection, triggerForm(tasks, openRun))
  stopEvents?.abort()
  stopEvents = new AbortController()
  void watchEvents(
    refreshSoon,
    (on) => {
      live.textContent = on ? 'live' : 'reconnecting…'
      live.className = on ? 'live on' : 'live'
    },
    stopEvents.signal,
  )
  await Promise.all([runs.refresh(), events.refresh(), schedules.refresh()])
  const match = /^#run\/(.+)$/.exec(location.hash)
  if (match) await run.show(decodeURIComponent(match[1]))
}

/** The sign-in form: the only thing on the page until the secret is accepted. */
function gate(rejected?: ApiError): void {
  secret.clear()
  signOut.hidden = true
  const input = h('input', { id: 'secret', type: 'password', autocomplete: 'current-password', required: true })
  fill(
    root,
    h(
      'form',
      {
        class: 'gate',
        onsubmit: (event: Event) => {
          event.preventDefault()
          secret.set(input.value)
          void start()
        },
      },
      h('h2', null, 'Sign in'),
      h('p', null, 'Enter the task secret (SVC_TASK_SECRET on the server). It is kept in this tab only.'),
      h('label', { for: 'secret' }, 'Task secret'),
      input,
      h('div', null, h('button', { type: 'submit' }, 'Sign in')),
      rejected ? h('div', { role: 'alert', class: 'problems' }, h('p', null, rejected.message)) : null,
    ),
  )
  input.focus()
}

signOut.addEventListener('click', () => {
  stopEvents?.abort()
  live.textContent = ''
  gate()
})

window.addEventListener('hashchange', () => {
  const match = /^#run\/(.+)$/.exec(location.hash)
  void run.show(match ? decodeURIComponent(match[1]) : null)
})

void start()
