/**
 * The `match` of `ctx.step.waitForEvent`: data paths and the values found
 * there, all of which an event's data must hold for the wait to take it,
 * such as `{ orderId: ctx.input.orderId }` or `{ 'customer.id': 7 }`.
 * Values compare as JSON does: the same primitive, or arrays and objects
 * with equal members, in any key order. Edge-safe.
 */
import { describe } from '../describe.ts'
import { sameJson } from '../same-json.ts'

export type EventMatch = Readonly<Record<string, unknown>>

/** Most paths one `match` may name. */
export const MAX_MATCH_PATHS = 16

// Dotted names of object members: `orderId`, `customer.id`, `line_items.0.sku`.
const PATH = /^[A-Za-z0-9_$-]+(\.[A-Za-z0-9_$-]+)*$/

/** Why `match` is not a match, or `null`. */
export function matchProblem(match: unknown): string | null {
  const shape = `match must be an object of data paths and values, such as { orderId: 'o-42' } or { 'customer.id': 7 }`
  if (match === null || typeof match !== 'object' || Array.isArray(match)) return `${shape} (got ${describe(match)})`
  const paths = Object.keys(match)
  if (paths.length > MAX_MATCH_PATHS) return `match names at most ${MAX_MATCH_PATHS} paths (got ${paths.length})`
  for (const path of paths) {
    if (!PATH.test(path)) return `match path ${describe(path)} must be member names joined by '.', such as 'customer.id'`
    if ((match as Record<string, unknown>)[path] === undefined)
      return `match.${path} is undefined: name a value the data must hold, or leave the path out`
  }
  return null
}

/** Whether `data` holds every value of `match` at its path. */
export function matchesEvent(match: EventMatch | undefined, data: unknown): boolean {
  if (match === undefined) return true
  for (const path in match) if (!sameJson(valueAt(data, path), match[path])) return false
  return true
}

/**
 * The paths of `match`, each split into its member names, with its value:
 * for a store that narrows in its query language the events it reads
 * before `matchesEvent` decides.
 */
export function matchPaths(match: EventMatch | undefined): { names: string[]; value: unknown }[] {
  return match === undefined ? [] : Object.entries(match).map(([path, value]) => ({ names: path.split('.'), value }))
}

function valueAt(data: unknown, path: string): unknown {
  let value = data
  for (const name of path.split('.')) {
    if (value === null || typeof value !== 'object' || !Object.hasOwn(value, name)) return undefined
    value = (value as Record<string, unknown>)[name]
  }
  return value
}
