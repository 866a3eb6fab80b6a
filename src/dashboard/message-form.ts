/**
 * The form that sends a run a message, a signal or an update (signals.ts,
 * updates.ts): a name, JSON data checked before anything is sent, and an
 * optional id sent as the `Idempotency-Key` header; below it, the problem
 * or the answer. Its fields keep what the user typed across the redraws
 * each run change brings, and are emptied when another run is shown.
 */
import { type Child, fill, h } from './dom.ts'
import { jsonField } from './json-field.ts'
import { errorView } from './tasks.ts'

export interface MessageFormOptions {
  /** `signal` or `update`: the fields' ids and classes (`signal-name`, `.signal-answer`…). */
  kind: string
  /** The labels of the three fields and of the button. */
  labels: { name: string; data: string; id: string; send: string }
  placeholders: { name: string; data: string }
  /** Sends the message to run `runId`; resolves to what the answer line shows. */
  send(runId: string, name: string, data: unknown, id: string | undefined): Promise<Child>
  /** Called after each send the server answered, a refusal too when `afterRefusal`, so that the run is read again. */
  sent(): void
  /** A refused message is kept with its answer too (an update's): the run is read again after one. */
  afterRefusal?: boolean
}

export interface MessageForm {
  readonly form: HTMLFormElement
  readonly name: HTMLInputElement
  readonly data: HTMLTextAreaElement
  readonly id: HTMLInputElement
  readonly problems: HTMLDivElement
  readonly answer: HTMLParagraphElement
  /** The run the form sends to; another run empties the fields and what was said. */
  show(runId: string): void
  /** Whether a problem or an answer is shown. */
  said(): boolean
}

export function messageForm(options: MessageFormOptions): MessageForm {
  const { kind, labels, placeholders } = options
  let runId: string | null = null
  const name = h('input', { id: `${kind}-name`, name: 'name', required: true, spellcheck: 'false', placeholder: placeholders.name })
  const data = h('textarea', { id: `${kind}-data`, name: 'data', rows: 3, spellcheck: 'false', placeholder: placeholders.data })
  const id = h('input', { id: `${kind}-id`, name: 'id', spellcheck: 'false' })
  const send = h('button', { type: 'submit' }, labels.send)
  // Not `.problems`: the panel's own alert is the one element of that class in it.
  const problems = h('div', { role: 'alert', class: `${kind}-problems` })
  const answer = h('p', { role: 'status', class: `muted ${kind}-answer` })

  const submit = async (event: Event) => {
    event.preventDefault()
    fill(problems)
    fill(answer)
    const to = runId
    if (to === null) return
    const field = jsonField(data.value)
    if ('problem' in field) {
      fill(problems, h('p', null, field.problem))
      return
    }
    const key = id.value.trim()
    send.disabled = true
    try {
      fill(answer, await options.send(to, name.value.trim(), field.value, key === '' ? undefined : key))
      options.sent()
    } catch (error) {
      fill(problems, errorView(error))
      if (options.afterRefusal) options.sent()
    } finally {
      send.disabled = false
    }
  }

  const form = h(
    'form',
    { class: kind, onsubmit: (event: Event) => void submit(event) },
    h('label', { for: `${kind}-name` }, labels.name),
    name,
    h('label', { for: `${kind}-data` }, labels.data),
    data,
    h('label', { for: `${kind}-id` }, labels.id),
    id,
    h('div', null, send),
  )

  return {
    form,
    name,
    data,
    id,
    problems,
    answer,
    show(shown) {
      if (shown === runId) return
      runId = shown
      name.value = ''
      data.value = ''
      id.value = ''
      fill(problems)
      fill(answer)
    },
    said: () => problems.hasChildNodes() || answer.hasChildNodes(),
  }
}
