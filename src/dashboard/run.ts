/** One run: what it was given and gave back, its timeline, logs, attempts and steps, what it waits on, its signals and updates, and the actions on it. */
import { compensationView } from './compensation.ts'
import { unknownWaitpointType } from '../runtime/tasks/steps/waitpoint-kinds.ts'
import { api } from './api.ts'
import { type Child, click, dataTable, duration, fill, h, statusBadge, tagChips, time } from './dom.ts'
import { jsonView } from './json.ts'
import { logsTable } from './logs.ts'
import { signalsView } from './signals.ts'
import { errorView } from './tasks.ts'
import { timelineView } from './timeline.ts'
import { updatesView } from './updates.ts'
import { FINISHED, type Run } from './types.ts'

export interface RunView {
  element: HTMLElement
  /** Shows run `id`, or nothing. */
  show(id: string | null): Promise<void>
  refresh(): Promise<void>
  readonly id: string | null
}

export function runView(openRun: (id: string) => void, changed: () => void): RunView {
  const element = h('section', { id: 'run', 'aria-labelledby': 'run-heading', hidden: true })
  const problems = h('div', { role: 'alert', class: 'problems' })
  // What the last cancel took with it; cleared when another run is shown.
  const cancelled = h('p', { role: 'status', class: 'muted cancelled-with' })
  // The token payload survives refreshes of the run, which happen on every event.
  const payload = h('textarea', { id: 'token-payload', rows: 3, spellcheck: 'false', value: '{}' })
  let current: string | null = null
  const opened = new Set<string>()
  let allSteps = false
  // Drawn at its own width, and kept across refreshes with its scroll position.
  const timeline = timelineView()
  // The signal form keeps what the user typed across refreshes, as the token payload does.
  const signals = signalsView(changed)
  const updates = updatesView(changed)

  const act = async (fn: () => Promise<unknown>) => {
    fill(problems)
    fill(cancelled)
    try {
      await fn()
      changed()
    } catch (error) {
      fill(problems, errorView(error))
    }
  }

  // The panel goes, and the address no longer names the run.
  const close = () => {
    history.replaceState(null, '', location.pathname + location.search)
    void view.show(null)
  }

  const render = (run: Run) => {
    const live = !FINISHED.has(run.status)
    const last = run.attempts.at(-1)
    // A new run of the task; from a step, with the steps recorded before it kept.
    const replay = (fromStep?: string) =>
      act(async () =>
        openRun(
          (
            await api<{ id: string }>(
              'POST',
              `/__tasks/runs/${encodeURIComponent(run.id)}/replay`,
              fromStep === undefined ? undefined : { fromStep },
            )
          ).id,
        ),
      )
    const replayFrom = live ? null : (key: string) => replayButton(key, () => replay(key))
    // Cancels the run (with `?compensate=true`, its undos first), and says which child runs went with it.
    const cancelButton = (label: string, query: string) =>
      h(
        'button',
        {
          type: 'button',
          class: 'danger',
          onclick: () =>
            act(async () => {
              const answer = await api<{ cancelledWith?: string[] }>('POST', `/__tasks/runs/${encodeURIComponent(run.id)}/cancel${query}`)
              const children = answer.cancelledWith ?? []
              if (children.length > 0) {
                fill(
                  cancelled,
                  'Cancelled with it: ',
                  children.map((id, i) => [i > 0 ? ', ' : '', runLink(id, openRun)]),
                )
              }
            }),
        },
        label,
      )
    timeline.show(run)
    fill(
      element,
      h('h2', { id: 'run-heading' }, 'Run ', h('code', { class: 'run-id' }, run.id)),
      h(
        'div',
        { class: 'actions' },
        h('button', { type: 'button', class: 'close', onclick: close }, 'Close'),
        wakeable(run)
          ? h(
              'button',
              {
                type: 'button',
                onclick: () => act(() => api('POST', `/__tasks/runs/${encodeURIComponent(run.id)}/wake`)),
              },
              'Wake now',
            )
          : null,
        live ? cancelButton('Cancel', '') : null,
        // Its completed steps' undos first (docs/tasks.md "Compensation").
        live && run.compensation === undefined && Object.values(run.steps).some((step) => step.compensable)
          ? cancelButton('Cancel and undo', '?compensate=true')
          : null,
        FINISHED.has(run.status)
          ? h(
              'button',
              {
                type: 'button',
                onclick: () => replay(),
              },
              'Replay',
            )
          : null,
      ),
      problems,
      cancelled,
      h(
        'dl',
        { class: 'facts' },
        fact('Task', h('code', null, run.taskName)),
        fact('Status', statusBadge(run.status)),
        fact('Trigger', run.trigger),
        run.version ? fact('Version', h('code', null, run.version)) : null,
        run.tags?.length ? fact('Tags', tagChips(run.tags)) : null,
        run.migrations?.length ? fact('Moved', moves(run)) : null,
        run.replayOf ? fact('Replay of', runLink(run.replayOf, openRun)) : null,
        run.parentRunId ? fact('Parent run', runLink(run.parentRunId, openRun)) : null,
        fact('Created', time(run.createdAt)),
        run.status === 'scheduled' && run.runAt ? fact('Due', time(run.runAt)) : null,
        run.deadline ? fact('Deadline', time(run.deadline)) : null,
        fact('Started', time(run.startedAt)),
        fact('Finished', time(run.finishedAt)),
      ),
      run.suspended ? waitpoint(run, openRun, payload, act) : null,
      signals.render(run),
      updates.render(run),
      h('h3', null, 'Input'),
      jsonView(run.input),
      run.metadata ? [h('h3', null, 'Metadata'), h('div', { class: 'metadata' }, jsonView(run.metadata))] : null,
      run.status === 'completed'
        ? [h('h3', null, 'Result'), jsonView(run.result)]
        : last?.error && !live
          ? [
              h('h3', null, 'Error'),
              h('pre', { class: 'error' }, run.compensation?.error ?? last.error),
              last.step && replayFrom
                ? h('p', { class: 'failed-step' }, 'Thrown by step ', h('code', null, last.step), ' ', replayFrom(last.step))
                : null,
            ]
          : null,
      run.compensation ? compensationView(run.compensation) : null,
      h('h3', null, 'Timeline'),
      timeline.element,
      h('h3', null, 'Logs'),
      logsTable(run),
      h('h3', null, 'Attempts'),
      attempts(run),
      h('h3', null, 'Steps'),
      steps(run, opened, allSteps, replayFrom, () => {
        allSteps = true
        render(run)
      }),
    )
  }

  const view: RunView = {
    element,
    get id() {
      return current
    },
    async show(id) {
      if (id !== current) {
        opened.clear()
        allSteps = false
      }
      if (id !== current) fill(cancelled)
      current = id
      element.hidden = id === null
      if (id === null) return
      fill(problems)
      await view.refresh()
    },
    async refresh() {
      const id = current
      if (id === null) return
      try {
        const [run] = await Promise.all([api<Run>('GET', `/__tasks/${encodeURIComponent(id)}`), signals.load(id), updates.load(id)])
        if (id === current) render(run)
      } catch (error) {
        if (id === current)
          fill(
            element,
            h('h2', { id: 'run-heading' }, 'Run ', h('code', { class: 'run-id' }, id)),
            h('div', { role: 'alert' }, errorView(error)),
          )
      }
    },
  }
  return view
}

/**
 * Whether the run waits on time alone: a sleep, or the delay before it
 * starts, which waking ends now. A token, an event or a child run ends the
 * other waits, and the server refuses to wake them.
 */
function wakeable(run: Run): boolean {
  return run.status === 'scheduled' || (run.status === 'suspended' && run.suspended?.waitpoint.type === 'sleep')
}

function fact(name: string, value: Child): Child {
  return [h('dt', null, name), h('dd', null, value)]
}

/** Each move of the run to another version, because no live process served its own. */
function moves(run: Run): HTMLElement {
  return h(
    'ul',
    { class: 'moves' },
    run.migrations!.map((move) =>
      h('li', null, 'from ', h('code', null, move.from), ' to ', h('code', null, move.to), ' at ', time(move.at)),
    ),
  )
}

function runLink(id: string, openRun: (id: string) => void): HTMLElement {
  return h('a', { href: `#run/${id}`, onclick: click(() => openRun(id)) }, id)
}

function waitpoint(
  run: Run,
  openRun: (id: string) => void,
  payload: HTMLTextAreaElement,
  act: (fn: () => Promise<unknown>) => void,
): Child {
  const { stepKey, waitpoint: wait } = run.suspended!
  const on = waitingOn(wait, openRun)
  const complete =
    wait.type === 'token'
      ? h(
          'form',
          {
            class: 'token',
            onsubmit: (event: Event) => {
              event.preventDefault()
              act(() => api('POST', `/__tasks/tokens/${encodeURIComponent(wait.tokenId)}`, parse(payload.value)))
            },
          },
          h('label', { for: 'token-payload' }, 'Payload (JSON)'),
          payload,
          h('div', null, h('button', { type: 'submit' }, 'Complete token')),
        )
      : null
  return [h('h3', null, 'Waiting on'), h('p', null, 'Step ', h('code', null, stepKey), ': ', on), complete]
}

function waitingOn(wait: NonNullable<Run['suspended']>['waitpoint'], openRun: (id: string) => void): Child {
  switch (wait.type) {
    case 'sleep':
      return ['Sleeping until ', time(wait.until)]
    case 'task':
      return ['Waiting for run ', runLink(wait.runId, openRun), ' of ', h('code', null, wait.task)]
    case 'event':
      return ['Waiting for event ', h('code', null, wait.name), wait.timeoutAt ? [' until ', time(wait.timeoutAt)] : null]
    case 'signal':
      return ['Waiting for signal ', h('code', null, wait.signal), wait.timeoutAt ? [' until ', time(wait.timeoutAt)] : null]
    case 'token':
      return [
        wait.callback ? 'Waiting for a request to its callback URL, token ' : 'Waiting for token ',
        h('code', { class: 'token-id' }, wait.tokenId),
        wait.timeoutAt ? [' until ', time(wait.timeoutAt)] : null,
      ]
    default:
      return ['Waiting on ', h('code', null, unknownWaitpointType(wait))]
  }
}

function parse(text: string): unknown {
  if (text.trim() === '') return null
  try {
    return JSON.parse(text)
  } catch (error) {
    throw new Error(`The payload is not JSON: ${(error as Error).message}`)
  }
}

/** Attempts as a timeline: each bar starts and spans in proportion to the run's whole time. */
function attempts(run: Run): Child {
  const live = liveAttempt(run)
  if (run.attempts.length === 0) return h('p', { class: 'muted attempt-live' }, live ?? 'No attempt yet.')
  return [attemptTable(run), live && h('p', { class: 'muted attempt-live' }, live)]
}

/**
 * The attempt a running or suspended run is in. An attempt is recorded when
 * it ends: a suspension ends none, and the attempt goes on, under the same
 * number, once what the run waits on is met.
 */
function liveAttempt(run: Run): string | null {
  const n = run.attempts.length + 1
  if (run.status === 'running') return `Attempt ${n} is running; it is listed here once it ends.`
  if (run.status === 'suspended') return `Attempt ${n} is suspended until what the run waits on is met; it is listed here once it ends.`
  return null
}

function attemptTable(run: Run): Child {
  const start = Date.parse(run.attempts[0].startedAt)
  const end = Math.max(...run.attempts.map((a) => Date.parse(a.startedAt) + a.durationMs), start + 1)
  return dataTable(
    ['#', 'Started', 'Duration', 'Timeline', 'Error'],
    run.attempts.map((a) => {
      const left = ((Date.parse(a.startedAt) - start) / (end - start)) * 100
      const width = Math.max((a.durationMs / (end - start)) * 100, 0.5)
      return h(
        'tr',
        null,
        h('td', null, String(a.index)),
        h('td', null, time(a.startedAt)),
        h('td', null, duration(a.durationMs)),
        h('td', { class: 'timeline' }, bar(left, width, Boolean(a.error))),
        h('td', null, a.error ? h('span', { class: 'error' }, a.error) : h('span', { class: 'muted' }, '—')),
      )
    }),
    { class: 'attempts' },
  )
}

/** Steps listed before "Show all": a run of thousands of steps draws its timeline, not thousands of folds. */
const STEPS_SHOWN = 100

/** Steps fold; the ones the user opened stay open when the run is drawn again. */
function steps(run: Run, opened: Set<string>, all: boolean, replayFrom: ((key: string) => HTMLElement) | null, showAll: () => void): Child {
  const entries = Object.entries(run.steps)
  if (entries.length === 0) return h('p', { class: 'muted' }, 'No step recorded.')
  const shown = all ? entries : entries.slice(0, STEPS_SHOWN)
  const list = h(
    'ul',
    { class: 'steps' },
    shown.map(([key, step]) => {
      const details = h(
        'details',
        { class: 'step', open: opened.has(key) },
        h('summary', null, h('code', null, key), ' ', statusBadge(step.status)),
        jsonView(step.output),
      )
      details.addEventListener('toggle', () => (details.open ? opened.add(key) : opened.delete(key)))
      return h('li', null, details, replayFrom?.(key))
    }),
  )
  if (shown.length === entries.length) return list
  return [list, h('button', { type: 'button', class: 'more', onclick: showAll }, `Show all ${entries.length} steps`)]
}

/** Starts a new run that keeps the steps recorded before step `key` and runs it and the rest anew. */
function replayButton(key: string, onclick: () => void): HTMLElement {
  return h(
    'button',
    { type: 'button', class: 'replay-from', title: `Replay, keeping the steps recorded before "${key}"`, onclick },
    'Replay from here',
  )
}

/** Positioned through the CSSOM: the page's CSP allows no style attributes. */
function bar(left: number, width: number, failed: boolean): HTMLElement {
  const el = h('span', { class: failed ? 'bar failed' : 'bar' })
  el.style.left = `${left}%`
  el.style.width = `${width}%`
  return el
}
