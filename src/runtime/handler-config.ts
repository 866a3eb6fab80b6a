/**
 * The edge of `createSvcHandler` and of the hosts that mount it from a
 * handler's options (the Cloudflare worker, the function platforms): the
 * options are checked here, once, and turned into the `HandlerConfig` the
 * handler and its parts read. Edge-safe.
 */
import { telemetryOptionProblem } from './telemetry/types.ts'
import { DEFAULT_BODY_LIMIT } from './http/body.ts'
import { checkTaskSecretStrength } from './admin/secret-strength.ts'
import { checkCommonOptions } from './app/create.ts'
import { GlobalResponse } from './app/global-response.ts'
import { describe } from './describe.ts'
import { processEnv } from './env.ts'
import { firstTaskRoute } from './route-config.ts'
import type { HandlerConfig, HostParts, SvcHandlerOptions } from './handler-options.ts'

export function resolveHandlerOptions(options: SvcHandlerOptions, where: string, parts: HostParts): HandlerConfig {
  checkCommonOptions(options, where)
  const telemetryProblem = telemetryOptionProblem(options.telemetry)
  if (telemetryProblem) throw new TypeError(`${where}: ${telemetryProblem}`)
  const env = options.env ?? processEnv()
  const logger = options.logger ?? console
  const dev = options.dev ?? env.NODE_ENV === 'development'
  checkTaskSecretStrength(env, dev, where, logger)
  const pages = options.pages ?? []
  if (!Array.isArray(pages)) throw new TypeError(`${where}: pages must be an array of pages (got ${describe(pages)})`)
  if (options.fallback !== undefined && typeof options.fallback !== 'function') {
    throw new TypeError(`${where}: fallback must be a function (got ${describe(options.fallback)})`)
  }
  if (!parts.tasks) refuseTasks(options, where)
  return {
    where,
    routes: options.routes,
    pages,
    env,
    logger,
    R: options.responseClass ?? GlobalResponse,
    dev,
    bodyLimit: options.bodyLimit ?? DEFAULT_BODY_LIMIT,
    givenBodyLimit: options.bodyLimit,
    globalHooks: options.globalHooks,
    fallback: options.fallback,
    telemetry: options.telemetry,
    cache: options.cache,
    tasks: parts.tasks?.resolve(options, where),
  }
}

/** A handler without the task part: nothing may need one. */
function refuseTasks(options: SvcHandlerOptions, where: string): void {
  if (options.runtime !== undefined) throw new TypeError(`${where}: runtime is given, but this host was built for an app without tasks`)
  const task = firstTaskRoute(options.routes)
  if (task) {
    throw new TypeError(
      `${where}: route ${task.path} is a task, but this host was built for an app without tasks; build the app again (svc build), or serve it with createSvcHandler()`,
    )
  }
}
