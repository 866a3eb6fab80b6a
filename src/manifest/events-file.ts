/**
 * An app's event schemas: `src/events.ts` (or `.mts`, `.js`, `.mjs`)
 * exporting `events`, an object of event name → Standard Schema
 * (docs/events.md "Typed events"). The scanner reads the names only, from
 * the object's keys as written: the schemas are code, which runs where the
 * app runs, while the names must be known before it does, for
 * `.svc/types.d.ts`. Each name follows the runtime's rule
 * (`eventNameProblem`).
 */
import { eventNameProblem } from '../runtime/events/rules.ts'
import { type Node, nameOf, unwrap } from './ast.ts'
import type { ModuleExports } from './module-exports.ts'
import { SOURCE_LANG } from './parse.ts'
import type { Reporter } from './reporter.ts'

/** Where an app's event schemas live, relative to its root, without the extension. */
export const EVENTS_MODULE = 'src/events'

/** The files that may hold them, in the order they are looked for. */
export const EVENTS_FILES = Object.keys(SOURCE_LANG).map((ext) => `${EVENTS_MODULE}${ext}`)

/** What the scan knows of an app's event schemas. */
export interface ManifestEvents {
  /** Relative to the app root, with `/` separators. */
  file: string
  /** The declared event names, in the order they are written. */
  names: string[]
}

const SHAPE = "write export const events = { 'order.paid': v.object({ … }) }, one key per event name"

/** The event names `events` declares, reporting what the scanner cannot read. */
export function readEventSchemaNames(exports: ModuleExports, report: Reporter): string[] {
  const entry = exports.names.get('events')
  if (!entry) {
    report.error(
      { type: 'Program', start: 0, end: 0 },
      `exports no events: ${SHAPE}${exports.starExports.length > 0 ? ' (export * is not followed)' : ''}`,
    )
    return []
  }
  const init = entry.init && unwrap(entry.init)
  if (init?.type !== 'ObjectExpression') {
    report.error(entry.init ?? entry.node, `events must be an object written in this file: ${SHAPE}`)
    return []
  }
  const names: string[] = []
  for (const property of init.properties as Node[]) {
    const name = property.type === 'Property' && !property.computed ? nameOf(property.key) : undefined
    if (name === undefined) {
      report.error(property, `every key of events must be an event name written as it is, not computed or spread: ${SHAPE}`)
      continue
    }
    const problem = eventNameProblem(name)
    if (problem) report.error(property.key, `events: ${problem}`)
    else if (names.includes(name)) report.error(property.key, `events declares "${name}" twice`)
    else names.push(name)
  }
  return names
}
