/**
 * What an event's name and id may be, written once for the scanner (a
 * task's `on` export), the runtime (`sendEvent`) and the HTTP surface
 * (`POST /__events/<name>`); a signal's name and id follow the same rules.
 * Edge-safe: no `node:` import.
 */
import { describe } from '../describe.ts'

/** Longest event name, in characters. */
export const MAX_EVENT_NAME_LENGTH = 128
/** Longest event id, in characters: room for a UUID, or an id the sender already has (a webhook's delivery id). */
export const MAX_EVENT_ID_LENGTH = 200

// Letters, digits, '.', '-', '_' and '/': names such as 'order.paid',
// 'stripe/invoice.paid' or 'user-signed_up', which stay one path segment
// once '/' is percent-encoded and read the same in a URL, a log or a shell.
const EVENT_NAME = /^[A-Za-z0-9._/-]+$/

/** Why `value` is no event name, or `null` when it is one. */
export function eventNameProblem(value: unknown): string | null {
  return nameProblem(value, 'an event name', 'order.paid')
}

/** Why `value` is no signal name (`sendSignal`, `ctx.step.waitForSignal`), or `null`: the rule of event names. */
export function signalNameProblem(value: unknown): string | null {
  return nameProblem(value, 'a signal name', 'approval')
}

function nameProblem(value: unknown, what: string, example: string): string | null {
  if (typeof value !== 'string' || value.length === 0 || value.length > MAX_EVENT_NAME_LENGTH || !EVENT_NAME.test(value)) {
    return `${what} is 1 to ${MAX_EVENT_NAME_LENGTH} letters, digits, '.', '-', '_' or '/', such as '${example}' (got ${describe(value)})`
  }
  return null
}

/**
 * Why `value` is no event id, or `null` when it is one: 1 to
 * `MAX_EVENT_ID_LENGTH` characters, none of them a control character, so
 * that it prints on one line and travels in a header or a query.
 */
export function eventIdProblem(value: unknown): string | null {
  return idProblem(value, 'an event id')
}

/** Why `value` is no signal id, or `null`: the rule of event ids. */
export function signalIdProblem(value: unknown): string | null {
  return idProblem(value, 'a signal id')
}

/** Why a signal sent as `name`, with `id` when given, cannot be: the name's problem, else the id's; `null` when neither has one. */
export function signalProblem(name: unknown, id: unknown): string | null {
  return signalNameProblem(name) ?? (id === undefined ? null : signalIdProblem(id))
}

/** Why an update sent as `name`, with `id` when given, cannot be (`updateRun`, `ctx.onUpdate`): the rules of signals. */
export function updateProblem(name: unknown, id: unknown): string | null {
  return nameProblem(name, 'an update name', 'add-item') ?? (id === undefined ? null : idProblem(id, 'an update id'))
}

function idProblem(value: unknown, what: string): string | null {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what the rule keeps out.
  if (typeof value === 'string' && value.length > 0 && value.length <= MAX_EVENT_ID_LENGTH && !/[\u0000-\u001f\u007f]/.test(value)) {
    return null
  }
  return `${what} is 1 to ${MAX_EVENT_ID_LENGTH} characters with no control characters (got ${describe(value)})`
}

/**
 * What a task's `on` export may be: one event name or a non-empty list of
 * them, each at most once. Returns the names, or the problem.
 */
export function eventListProblem(value: unknown): string | null {
  const names = typeof value === 'string' ? [value] : value
  if (!Array.isArray(names) || names.length === 0) {
    return `on must be an event name or a non-empty list of them, such as 'order.paid' or ['order.paid', 'order.refunded'] (got ${describe(value)})`
  }
  for (const name of names) {
    const problem = eventNameProblem(name)
    if (problem) return `on: ${problem}`
  }
  const twice = names.find((name, i) => names.indexOf(name) !== i)
  return twice === undefined ? null : `on names the event ${describe(twice)} twice`
}

/** The names of a valid `on` value, as a list. */
export function eventNames(value: string | readonly string[]): string[] {
  return typeof value === 'string' ? [value] : [...value]
}
