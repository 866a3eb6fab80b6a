/**
 * The runtime advisor: from a route's declared config and the signals in its
 * source, where it should run and with what compute (docs/cli.md
 * "svc runtime advise"). It never runs the route.
 *
 * - Persistent work (a WebSocket, a listening socket, a module-scope timer
 *   or loop, process state changed by handlers, or a task timeout past what
 *   function platforms allow) calls for class `dedicated` on a persistent host.
 * - Heavy modules raise the function memory to what they need.
 * - Node built-ins and native modules rule out edge workers; a route that uses
 *   nothing Node-only may run on one.
 * - Confidence follows the evidence: a WebSocket, a socket, a timer, a loop
 *   or a heavy import is strong; state changes are medium (a memo cache looks
 *   the same); a dedicated declaration with no evidence gets low confidence,
 *   since the scan cannot see everything.
 * - Where the declared config contradicts the evidence, severity is `warn`
 *   and `recommendation` says what to change.
 */
import { FUNCTION_MEMORY, type FunctionMemory } from '../runtime/types.ts'
import { taskNameFromPath } from '../runtime/route-config.ts'
import { dedicatedCompute, FUNCTION_TIMEOUT_LIMIT_MS, functionCompute } from './compute.ts'
import type { Confidence, Provider, ResolvedCompute, RouteAdvice, RouteSignal, ScannedRoute, Severity } from './types.ts'
import { PACKAGE_NAME } from '../runtime/package-name.ts'

const PERSISTENT = new Set<RouteSignal['kind']>(['websocket', 'listening-socket', 'module-timer', 'background-loop'])
const NODE_ONLY = new Set<RouteSignal['kind']>(['heavy-module', 'native-module', 'node-builtin'])
/** Modules that add nothing Node-only: the framework itself. */
const NEUTRAL_IMPORTS = new Set([PACKAGE_NAME])

/** The route fields the advisor reads. A task's name defaults to the one its path gives. */
export type AdvisableRoute = Pick<ScannedRoute, 'path' | 'file' | 'kind' | 'compute' | 'timeout' | 'signals' | 'imports'> &
  Partial<Pick<ScannedRoute, 'name' | 'schedule'>>

export function adviseRoutes(routes: readonly AdvisableRoute[]): RouteAdvice[] {
  return routes.map(adviseRoute)
}

export function adviseRoute(route: AdvisableRoute): RouteAdvice {
  const current = route.compute
  const persistent = route.signals.filter((s) => PERSISTENT.has(s.kind))
  const state = route.signals.filter((s) => s.kind === 'mutable-state')
  const nodeOnly = route.signals.filter((s) => NODE_ONLY.has(s.kind))
  const heavyMemory = largestMemory(route.signals)
  const longTimeout = route.kind === 'task' && route.timeout !== null && route.timeout > FUNCTION_TIMEOUT_LIMIT_MS

  const reasons = route.signals.map((s) => s.message)
  if (longTimeout) {
    reasons.push(`timeout ${route.timeout} ms is longer than function platforms allow (${FUNCTION_TIMEOUT_LIMIT_MS} ms, 15 minutes)`)
  }

  const advice = (
    recommended: ResolvedCompute,
    provider: Provider,
    confidence: Confidence,
    severity: Severity,
    recommendation?: string,
  ): RouteAdvice => {
    const next = nextCommand(route, recommendation)
    return {
      path: route.path,
      file: route.file,
      kind: route.kind,
      current,
      recommended,
      provider,
      confidence,
      severity,
      reasons,
      ...(recommendation ? { recommendation } : {}),
      ...(next ? { nextCommand: next } : {}),
    }
  }

  // Persistent work: dedicated compute on a persistent host.
  if (route.kind === 'hot' || persistent.length > 0 || state.length > 0 || longTimeout) {
    const recommended = current.class === 'dedicated' ? current : dedicatedCompute(heavyMemory, null)
    const strong = persistent.length > 0 || longTimeout
    const confidence: Confidence = strong ? 'high' : 'medium'
    if (route.kind === 'hot' && !strong && state.length === 0) {
      reasons.push('declared hot, but the source shows no websocket export, socket, timer or process state; a function may do')
    } else {
      reasons.push('needs a process that stays up between requests: class dedicated on a persistent host')
    }
    if (current.class === 'dedicated')
      return advice(recommended, 'persistent-host', route.kind === 'hot' && !strong && state.length === 0 ? 'medium' : confidence, 'info')
    return advice(recommended, 'persistent-host', confidence, 'warn', persistentFix(route, persistent, longTimeout))
  }

  // Function work: the memory the modules need, on the leanest host that can load them.
  const declaredMemory = current.class === 'function' ? (current.memory as FunctionMemory) : null
  const memory = maxMemory(declaredMemory ?? '1gb', heavyMemory ?? '1gb')
  const recommended = functionCompute(memory)
  const edge = nodeOnly.length === 0 && memory === '1gb'
  const provider: Provider = edge ? 'edge-worker' : 'function-platform'
  if (edge) {
    const unseen = route.imports.filter((specifier) => !NEUTRAL_IMPORTS.has(specifier))
    if (unseen.length > 0) {
      reasons.push(
        `uses nothing Node-only in this file, so an edge worker can run it if its imports (${unseen.join(', ')}) are edge-safe too`,
      )
    } else {
      reasons.push('uses nothing Node-only, so an edge worker or any function platform can run it')
    }
  } else if (nodeOnly.length > 0) {
    reasons.push('needs Node, so a function platform rather than an edge worker')
  } else {
    reasons.push(`runs with ${memory}, more memory than edge workers offer, so a function platform`)
  }

  if (current.class === 'dedicated') {
    reasons.push(
      'declares class dedicated, but the source shows no need for a persistent process; a function would do unless the route relies on something this scan cannot see',
    )
    return advice(recommended, provider, 'low', 'info')
  }
  if (heavyMemory && rank(heavyMemory) > rank(declaredMemory ?? '1gb')) {
    return advice(
      recommended,
      provider,
      'high',
      'warn',
      `set compute: { class: 'function', memory: '${memory}' } in the route export of ${route.file}`,
    )
  }
  const confidence: Confidence = edge && route.imports.some((s) => !NEUTRAL_IMPORTS.has(s)) ? 'medium' : 'high'
  return advice(recommended, provider, confidence, 'info')
}

/**
 * What to run next. A task is tried from the command line: an on-demand one
 * with `svc tasks run`, a scheduled one (whatever its input) with `svc tasks
 * list`, which shows when the scheduler runs it. Another route has a next
 * command only when there is a change to make, to check it with.
 */
function nextCommand(route: AdvisableRoute, recommendation: string | undefined): string | undefined {
  if (route.kind === 'task') return route.schedule ? 'svc tasks list' : `svc tasks run ${route.name ?? taskNameFromPath(route.path)}`
  return recommendation ? 'svc routes inspect' : undefined
}

function persistentFix(route: AdvisableRoute, persistent: RouteSignal[], longTimeout: boolean): string {
  const kinds = new Set(persistent.map((s) => s.kind))
  if (route.kind === 'task' && kinds.has('websocket')) {
    return `tasks are not HTTP endpoints, so the websocket export of ${route.file} is never served: move it to its own hot route`
  }
  if (route.kind === 'serverless' && kinds.has('websocket')) {
    return `remove kind: 'serverless' from ${route.file} so the websocket export makes it a hot route on dedicated compute`
  }
  if (longTimeout && kinds.size === 0) {
    return `set compute: { class: 'dedicated' } in the route export of ${route.file}, or split the work into ctx.step.run steps that each finish within 15 minutes`
  }
  if (kinds.size > 0 && [...kinds].every((k) => k === 'module-timer' || k === 'background-loop')) {
    return `move the periodic work into a task route with export const schedule = '<cron>', or set compute: { class: 'dedicated' } in the route export of ${route.file}`
  }
  return `set compute: { class: 'dedicated' } in the route export of ${route.file}${route.kind === 'serverless' ? ` (or kind: 'hot', which is dedicated by default)` : ''}, or keep the state in an external store`
}

function largestMemory(signals: RouteSignal[]): FunctionMemory | null {
  let largest: FunctionMemory | null = null
  for (const signal of signals) if (signal.memory && (largest === null || rank(signal.memory) > rank(largest))) largest = signal.memory
  return largest
}

function rank(memory: FunctionMemory): number {
  return FUNCTION_MEMORY.indexOf(memory)
}

function maxMemory(a: FunctionMemory, b: FunctionMemory): FunctionMemory {
  return rank(a) >= rank(b) ? a : b
}
