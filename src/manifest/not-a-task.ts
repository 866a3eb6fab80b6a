/**
 * A route file that is not a task but reads as one: a method export that is
 * a `defineTask(...)` call, or task config (`schedule`, `on`, `input`,
 * `route.retries`, …). Served as it is, its POST would run the task for any
 * caller, without the task secret, so each of them fails the scan at its
 * node, naming the change that makes the file a task. The runtime holds
 * routes handed to it from code to the same rule (`taskOnlyProblem`).
 */
import { HTTP_METHODS } from '../runtime/http-methods.ts'
import { TASK_EXPORTS, TASK_ROUTE_EXPORT, TASK_ROUTE_FIELDS } from '../runtime/task-only.ts'
import type { RouteKind } from '../runtime/types/routes.ts'
import { type Node, memberName, nameOf, unwrap } from './ast.ts'
import type { StaticProperty } from './literal.ts'
import type { ModuleExports } from './module-exports.ts'
import type { Reporter } from './reporter.ts'

/** Why a route is not a task, and the change that makes it one, for messages. */
export interface NotATask {
  why: string
  fix: string
}

/** Where a route's kind came from: `route.kind`, the `kind` export, a `websocket` export, or the default. */
export type KindSource = 'route.kind' | 'kind' | 'websocket' | 'default'

export function notATask(kind: RouteKind, source: KindSource, hasRouteExport: boolean): NotATask {
  switch (source) {
    case 'route.kind':
      return { why: `route.kind is '${kind}'`, fix: `set route.kind to 'task'` }
    case 'kind':
      return { why: `the kind export is '${kind}'`, fix: `set the kind export to 'task'` }
    default:
      return {
        why:
          source === 'websocket'
            ? 'this file exports websocket and declares no kind, so it is a hot route'
            : 'this file declares no kind, so it is a serverless route',
        fix: hasRouteExport ? `add kind: 'task' to the route export` : `add \`${TASK_ROUTE_EXPORT}\``,
      }
  }
}

/** Task config in a route that is not a task: each `route` field and top-level export only tasks read. */
export function reportTaskConfig(
  exports: ModuleExports,
  fields: ReadonlyMap<string, StaticProperty>,
  route: NotATask,
  report: Reporter,
): void {
  const problem = (label: string, hint = '') =>
    `${label} applies to tasks only, but ${route.why}; ${route.fix} if it is a task, or remove ${label}${hint}`
  for (const name of TASK_ROUTE_FIELDS) {
    const field = fields.get(name)
    if (field) report.error(field.value.node, problem(`route.${name}`))
  }
  for (const name of TASK_EXPORTS) {
    const entry = exports.names.get(name)
    if (!entry) continue
    const hint = name === 'input' ? ' (a route checks its requests with `export const schema = defineSchema({ body })`)' : ''
    report.error(entry.init ?? entry.node, problem(name, hint))
  }
}

/**
 * Method exports written as `defineTask(...)` calls in a route that is not a
 * task; `path` is the route's URL path.
 */
export function reportTaskHandlers(program: Node, exports: ModuleExports, path: string, route: NotATask, report: Reporter): void {
  const callees = defineTaskNames(program)
  for (const method of HTTP_METHODS) {
    const init = exports.names.get(method)?.init
    if (!init || !isDefineTaskCall(init, callees)) continue
    report.error(
      init,
      `${method} is a defineTask() handler, but ${route.why}: ${method} ${path} would run the task for any caller, without the task secret; ${route.fix}`,
    )
  }
}

/** The local names `defineTask` goes by: its own, and those it is imported as (`import { defineTask as task }`). */
function defineTaskNames(program: Node): Set<string> {
  const names = new Set(['defineTask'])
  for (const statement of program.body as Node[]) {
    if (statement.type !== 'ImportDeclaration') continue
    for (const specifier of statement.specifiers as Node[]) {
      if (specifier.type === 'ImportSpecifier' && nameOf(specifier.imported) === 'defineTask') names.add(specifier.local.name)
    }
  }
  return names
}

/** `defineTask(…)`, an alias of it, or `svc.defineTask(…)` through a namespace import. */
function isDefineTaskCall(node: Node, callees: Set<string>): boolean {
  const call = unwrap(node)
  if (call.type !== 'CallExpression') return false
  const callee = unwrap(call.callee)
  if (callee.type === 'Identifier') return callees.has(callee.name)
  return callee.type === 'MemberExpression' && memberName(callee) === 'defineTask'
}
