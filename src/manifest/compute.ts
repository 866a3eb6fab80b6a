/**
 * The compute contract: `function` (the default
 * for serverless routes and tasks) with one of the selectable memory sizes,
 * or `dedicated`, a machine profile whose memory and CPU requests are kept
 * as declared. Dedicated manifests also carry the legacy
 * `machine: { memoryMb, cpus }` shape for platforms that still size from it.
 */
import { FUNCTION_MEMORY, type ComputeClass, type ComputeConfig, type RouteKind } from '../runtime/types.ts'
import { unknownFieldProblem } from '../runtime/route-config.ts'
import type { ResolvedCompute } from './types.ts'
import type { StaticValue } from './literal.ts'
import type { Reporter } from './reporter.ts'

/** New HTTP endpoints and tasks run as class `function` with this memory. */
export const DEFAULT_FUNCTION_MEMORY = '1gb'

/**
 * The longest per-invocation timeout function platforms allow: 15 minutes,
 * the ceiling of the common function platforms. A task that needs longer
 * attempts belongs on a persistent host.
 */
export const FUNCTION_TIMEOUT_LIMIT_MS = 900_000

const MEMORY_SIZE = /^(\d+(?:\.\d+)?)\s*(mb|gb)$/i

/**
 * Megabytes of a memory size string (`'512mb'` gives 512, `'2gb'` gives
 * 2048, `'1.5gb'` gives 1536), or `null` when the string is not a size.
 * Sizes are binary: 1gb is 1024mb, as machine profiles count them.
 */
export function parseMemorySize(value: string): number | null {
  const match = MEMORY_SIZE.exec(value.trim())
  if (!match) return null
  const amount = Number(match[1]) * (match[2].toLowerCase() === 'gb' ? 1024 : 1)
  if (!Number.isFinite(amount) || amount <= 0 || !Number.isInteger(amount)) return null
  return amount
}

// Keyed by ComputeConfig, so tsc fails when a field is added to one and not the other.
const COMPUTE_FIELD_SET: Record<keyof ComputeConfig, true> = { class: true, memory: true, cpu: true }
const COMPUTE_FIELDS = Object.keys(COMPUTE_FIELD_SET)

/** The default contract of a kind: hot routes are dedicated, everything else a 1gb function. */
export function defaultCompute(kind: RouteKind): ResolvedCompute {
  return kind === 'hot' ? dedicatedCompute(null, null) : functionCompute(DEFAULT_FUNCTION_MEMORY)
}

export function functionCompute(memory: string): ResolvedCompute {
  return { class: 'function', memory, cpu: null }
}

export function dedicatedCompute(memory: string | null, cpu: number | null): ResolvedCompute {
  return { class: 'dedicated', memory, cpu, machine: { memoryMb: memory === null ? null : parseMemorySize(memory), cpus: cpu } }
}

/**
 * Normalizes a route's `compute` literal. Invalid fields are reported and
 * fall back to the kind's default, so one mistake gives one error.
 */
export function normalizeCompute(kind: RouteKind, compute: StaticValue | undefined, report: Reporter): ResolvedCompute {
  if (compute === undefined) return defaultCompute(kind)
  if (!compute.properties) {
    if (compute.ok) report.error(compute.node, `route.compute must be an object such as { class: 'function', memory: '1gb' }`)
    return defaultCompute(kind)
  }
  const fields = compute.properties
  for (const [name, field] of fields) {
    if (!Object.hasOwn(COMPUTE_FIELD_SET, name)) report.error(field.key, unknownFieldProblem('route.compute', name, COMPUTE_FIELDS))
  }

  let computeClass: ComputeClass = kind === 'hot' ? 'dedicated' : 'function'
  const declaredClass = fields.get('class')?.value
  if (declaredClass?.ok) {
    if (declaredClass.value === 'function' || declaredClass.value === 'dedicated') {
      if (kind === 'hot' && declaredClass.value === 'function') {
        report.error(
          declaredClass.node,
          `hot routes need compute class 'dedicated': a function cannot hold WebSockets or process state between requests; remove class or set class: 'dedicated'`,
        )
      } else {
        computeClass = declaredClass.value
      }
    } else {
      report.error(declaredClass.node, `route.compute.class must be 'function' or 'dedicated' (got ${JSON.stringify(declaredClass.value)})`)
    }
  }

  const memory = fields.get('memory')?.value
  const cpu = fields.get('cpu')?.value

  if (computeClass === 'function') {
    let size: string = DEFAULT_FUNCTION_MEMORY
    if (memory?.ok) {
      if (typeof memory.value === 'string' && (FUNCTION_MEMORY as readonly string[]).includes(memory.value)) {
        size = memory.value
      } else {
        report.error(
          memory.node,
          `route.compute.memory for class 'function' must be one of ${FUNCTION_MEMORY.map((m) => `'${m}'`).join(', ')} (got ${JSON.stringify(memory.value)})`,
        )
      }
    }
    if (cpu?.ok) {
      report.error(cpu.node, `route.compute.cpu applies to class 'dedicated' only; function CPU follows its memory size`)
    }
    return functionCompute(size)
  }

  let size: string | null = null
  if (memory?.ok) {
    if (typeof memory.value === 'string' && parseMemorySize(memory.value) !== null) {
      size = memory.value
    } else {
      report.error(memory.node, `route.compute.memory must be a size such as '512mb' or '2gb' (got ${JSON.stringify(memory.value)})`)
    }
  }
  let cpus: number | null = null
  if (cpu?.ok) {
    if (typeof cpu.value === 'number' && Number.isInteger(cpu.value) && cpu.value > 0) {
      cpus = cpu.value
    } else {
      report.error(cpu.node, `route.compute.cpu must be a positive whole number of CPUs (got ${JSON.stringify(cpu.value)})`)
    }
  }
  return dedicatedCompute(size, cpus)
}
