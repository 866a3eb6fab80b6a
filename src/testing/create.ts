/**
 * `createTestRuntime`, as `svcjs/testing` exports it: the test runtime of
 * an app's directory, loaded as `svc dev` loads it, or of routes given.
 */
import { describe } from '../runtime/describe.ts'
import { loadApiRoutes, loadEvents } from '../node/loaders.ts'
import { testRuntime } from './test-runtime.ts'
import type { LoadedApp, TestRuntime, TestRuntimeOptions } from './types.ts'

/**
 * A task runtime for a unit test, on the memory store and a virtual clock
 * (docs/testing.md): `await createTestRuntime({ root: appDir })`, or
 * `{ routes: [{ path: '/api/jobs/welcome', module }] }`.
 */
export async function createTestRuntime(options: TestRuntimeOptions): Promise<TestRuntime> {
  if (options === null || typeof options !== 'object') {
    throw new TypeError(
      `createTestRuntime(options): options must be an object with root (the app's directory) or routes (got ${describe(options)})`,
    )
  }
  const { root, routes } = options
  if ((root === undefined) === (routes === undefined)) {
    throw new TypeError(
      `createTestRuntime(): give root (the app's directory, whose src/api is loaded) or routes (each { path, module }), ${root === undefined ? 'not neither' : 'not both'}`,
    )
  }
  if (routes !== undefined) {
    if (!Array.isArray(routes))
      throw new TypeError(`createTestRuntime(): routes must be an array of { path, module } (got ${describe(routes)})`)
    return testRuntime(options, { routes, events: options.events }, loadApp)
  }
  const app = await loadApp(root!)
  return testRuntime(options, { routes: app.routes, events: options.events ?? app.events }, loadApp)
}

/** The task routes and event schemas of the app at `root`, loaded as `svc dev` loads them. */
async function loadApp(root: string): Promise<LoadedApp> {
  return { routes: await loadApiRoutes({ root }), events: await loadEvents({ root }) }
}
