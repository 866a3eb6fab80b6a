import { afterEach } from 'vitest'
import { createTaskRuntime, type TaskRuntimeInstance, type TaskRuntimeOptions } from '../../src/runtime/tasks/index.ts'
import type { Logger, RouteConfig, RouteModule, RuntimeApiRoute, TaskContext } from '../../src/types.ts'

/** A hand-written task route: `/api/<name with dots as slashes>`. */
export function task(
  name: string,
  POST: (ctx: TaskContext<any>) => unknown,
  extra: { route?: Omit<RouteConfig, 'kind'>; input?: unknown; schedule?: string } = {},
): RuntimeApiRoute {
  const module: RouteModule = { route: { kind: 'task', ...extra.route }, POST }
  if (extra.input !== undefined) module.input = extra.input as RouteModule['input']
  if (extra.schedule !== undefined) module.schedule = extra.schedule
  return { path: `/api/${name.split('.').join('/')}`, module }
}

export interface CapturedLogger extends Logger {
  lines: { level: 'info' | 'warn' | 'error'; text: string }[]
  text(level?: 'info' | 'warn' | 'error'): string
}

export function captureLogger(): CapturedLogger {
  const lines: CapturedLogger['lines'] = []
  const push = (level: 'info' | 'warn' | 'error') => (...args: unknown[]) => {
    lines.push({ level, text: args.map(String).join(' ') })
  }
  return {
    lines,
    info: push('info'),
    warn: push('warn'),
    error: push('error'),
    text: (level) => lines.filter((l) => !level || l.level === level).map((l) => l.text).join('\n'),
  }
}

const open: TaskRuntimeInstance[] = []
afterEach(async () => {
  for (const rt of open.splice(0)) await rt.close()
})

/** A runtime with a capturing logger, closed after each test. */
export function runtime(
  routes: RuntimeApiRoute[],
  options: Partial<TaskRuntimeOptions> = {},
): TaskRuntimeInstance & { logger: CapturedLogger } {
  const logger = captureLogger()
  const rt = createTaskRuntime({ routes, logger, env: {}, ...options })
  open.push(rt)
  return Object.assign(rt, { logger: (options.logger as CapturedLogger | undefined) ?? logger })
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

/** Polls until `check` returns a truthy value (real time, small steps). */
export async function until<T>(check: () => T | Promise<T>, timeoutMs = 2000): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const value = await check()
    if (value) return value as NonNullable<T>
    if (Date.now() > deadline) throw new Error('condition not met in time')
    await sleep(5)
  }
}
