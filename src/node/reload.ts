/**
 * Swapping an app's routes and pages in a running server without dropping
 * a connection (`SvcServer.reload`, which `svc dev` calls on every change).
 * Requests already running finish on the old handler; open WebSockets stay
 * on the module they opened with. The new handler is built before anything
 * is swapped, so a bad route leaves the old app serving.
 */
import type { CoreHandler } from '../runtime/handler.ts'
import { checkServerOptions, type SvcServerOptions } from './options.ts'
import type { RuntimeLifecycle } from './lifecycle.ts'
import type { RuntimeApiRoute, RuntimePage, TaskRuntime } from '../types.ts'
import type { EventSchemas } from '../runtime/events/schemas.ts'

export interface ReloadableApp {
  apiRoutes: RuntimeApiRoute[]
  pages: RuntimePage[]
  events?: EventSchemas
}

export interface ReloadableHandler {
  /** The handler serving now. */
  readonly current: CoreHandler
  reload(app: ReloadableApp): Promise<void>
}

export interface ReloadableHandlerOptions {
  /** Builds the core handler of an app over a task runtime. */
  build(app: ReloadableApp, runtime: TaskRuntime | undefined): CoreHandler
  /** The server's task runtime, replaced along with the task routes when the server created it. */
  lifecycle: RuntimeLifecycle
  /** True once the server is closing: a reload then is refused. */
  closing(): boolean
}

export function createReloadableHandler(app: ReloadableApp, options: ReloadableHandlerOptions): ReloadableHandler {
  const { build, lifecycle } = options
  let current = build(app, lifecycle.runtime)
  return {
    get current() {
      return current
    },
    async reload(next) {
      if (options.closing()) throw new Error('reload(): the server is closing')
      checkServerOptions({ apiRoutes: next?.apiRoutes, pages: next?.pages } as SvcServerOptions, 'reload()')
      const runtime = lifecycle.successor(next.apiRoutes, next.events)
      current = build(next, runtime)
      lifecycle.adopt(runtime)
    },
  }
}
