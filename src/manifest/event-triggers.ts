/**
 * Reads the events that start a task: a top-level `on` export or `route.on`,
 * one event name or a list of them, written as static literals like
 * `schedule`. What a name and a list may be is the runtime's rule
 * (`eventListProblem`), so the scanner and the runtime agree on every value.
 * On a route that is not a task they are an error (not-a-task.ts): the names
 * would start nothing, without a word.
 */
import { eventListProblem, eventNameProblem, eventNames } from '../runtime/events/rules.ts'
import type { Node } from './ast.ts'
import { type StaticValue, readExportLiteral, snippet } from './literal.ts'
import type { ExportEntry } from './module-exports.ts'
import type { Reporter } from './reporter.ts'

/**
 * The event names of a task, as a list, or `null` when it declares none.
 * `route.on` is read second and wins over the `on` export, as at runtime.
 */
export function readEventTriggers(
  inRoute: StaticValue | undefined,
  entry: ExportEntry | undefined,
  source: string,
  report: Reporter,
): string[] | null {
  const exported = readExportLiteral(entry, 'on', source, report)
  let names: string[] | null = null
  let declared: StaticValue | null = null
  for (const value of [exported, inRoute]) {
    if (!value?.ok) continue
    const problem = eventListProblem(value.value)
    if (problem) {
      report.error(offendingNode(value), problem)
      continue
    }
    const read = eventNames(value.value as string | string[])
    if (names !== null && declared !== null && !sameEvents(names, read)) {
      report.warn(
        `route.on (${snippet(source, value.node)}) and the on export (${snippet(source, declared.node)}) differ; route.on wins, remove one of them`,
      )
    }
    names = read
    declared = value
  }
  return names
}

/** Where a bad `on` value goes wrong: the first bad or repeated name of a list, else the whole value. */
function offendingNode(value: StaticValue): Node {
  const items = value.items ?? []
  const bad = items.find((item) => eventNameProblem(item.value) !== null)
  const repeated = items.find((item, i) => items.findIndex((other) => other.value === item.value) !== i)
  return (bad ?? repeated ?? value).node
}

/** Whether two lists name the same events, in any order. */
function sameEvents(a: string[], b: string[]): boolean {
  return a.length === b.length && a.every((name) => b.includes(name))
}
