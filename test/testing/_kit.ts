/** What the kit's suites share: the virtual clock's start, and a task route made of a handler. */
import type { RuntimeApiRoute, TaskContext } from '../../src/types.ts'

export const START = Date.parse('2030-01-01T00:00:00.000Z')

/** The task `name` (dots are folders) with handler `POST` and `route` options. */
export function task(name: string, POST: (ctx: TaskContext<any>) => unknown, route: Record<string, unknown> = {}): RuntimeApiRoute {
  return { path: `/api/${name.split('.').join('/')}`, module: { route: { kind: 'task', ...route }, POST } } as RuntimeApiRoute
}
