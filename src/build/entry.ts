import { join } from 'node:path'
import { instrumentationFile } from '../manifest/instrumentation-file.ts'
import type { ManifestPage } from '../types.ts'
import type { ManifestEvents } from '../manifest/events-file.ts'
import type { VersionedRoute } from './task-versions.ts'
import { PACKAGE_NAME } from '../runtime/package-name.ts'

/**
 * The source of a generated entry's first half: one static import per route
 * and page module, and `const app = { routes, pages, events, cache }`
 * pairing each manifest entry with its module, and the `events` export of
 * the app's event schemas (`src/events.ts`) when it has them. Static imports let the bundler see (and
 * tree-shake) the whole app; the target appends the line that serves `app`.
 */
export function appSource(
  root: string,
  routes: VersionedRoute[],
  pages: ManifestPage[],
  events?: ManifestEvents,
  telemetry: AppTelemetry = {},
): string {
  const lines: string[] = []
  // The app's instrumentation comes first, so its providers are registered
  // before any module of the app or of svc asks for a tracer.
  if (telemetry.instrumentation) lines.push(`import ${JSON.stringify(join(root, telemetry.instrumentation))}`)
  if (telemetry.otel) {
    lines.push(`import * as otelApi from '@opentelemetry/api'`, `import { otelTelemetry } from '${PACKAGE_NAME}'`)
    // The logs API of the SDK 2.x line (api 1.9 has no api.logs); a worker cannot load it when it runs.
    if (telemetry.logsApi) lines.push(`import * as otelLogsApi from '@opentelemetry/api-logs'`)
  }
  const routeItems = routes.map((route, i) => {
    lines.push(`import * as route${i} from ${JSON.stringify(join(root, route.file))}`)
    return `  { ...${JSON.stringify(runtimeFields(route))}, module: route${i} },`
  })
  const pageItems = pages.map((page, i) => {
    lines.push(`import * as page${i} from ${JSON.stringify(join(root, page.file))}`)
    const { path, file, mode, revalidate, tags } = page
    return `  { ...${JSON.stringify({ path, file, mode, revalidate, tags })}, module: page${i} },`
  })
  if (events) lines.push(`import { events as appEvents } from ${JSON.stringify(join(root, events.file))}`)
  const cache = pages.some((page) => page.mode === 'hybrid') ? `{ store: 'memory' }` : 'undefined'
  return [
    ...lines,
    `const app = {`,
    `  routes: [\n${routeItems.join('\n')}\n  ],`,
    `  pages: [\n${pageItems.join('\n')}\n  ],`,
    ...(events ? ['  events: appEvents,'] : []),
    ...(telemetry.otel ? [`  telemetry: otelTelemetry(otelApi${telemetry.logsApi ? ', { logsApi: otelLogsApi }' : ''}),`] : []),
    `  cache: ${cache},`,
    `}`,
    '',
  ].join('\n')
}

/** What a built app takes of OpenTelemetry (docs/observability.md "Every target"). */
export interface AppTelemetry {
  /** `src/instrumentation.ts` (or `.js`, `.mjs`, `.mts`), from the app root, when the app has one: imported first. */
  instrumentation?: string
  /** The app depends on `@opentelemetry/api`: the entry hands `otelTelemetry(api)` to the runtime. */
  otel?: boolean
  /** The app depends on `@opentelemetry/api-logs` too: the entry hands it over as `logsApi`, for log records on API 1.9. */
  logsApi?: boolean
}

/** The instrumentation file of the app at `root`, and whether it depends on the OpenTelemetry API. */
export function appTelemetry(root: string, dependencies: Record<string, string>): AppTelemetry {
  return {
    instrumentation: instrumentationFile(root),
    otel: Object.hasOwn(dependencies, '@opentelemetry/api'),
    logsApi: Object.hasOwn(dependencies, '@opentelemetry/api-logs'),
  }
}

/**
 * The manifest fields the runtime acts on, and a task's version when it has
 * one. The advisor's findings (reasons, signals, provider) stay out of
 * deployed bundles.
 */
function runtimeFields(route: VersionedRoute): Partial<VersionedRoute> {
  const { path, file, kind, name, methods, websocket, schedule, timezone, retries, timeout, origins, version } = route
  return {
    path,
    file,
    kind,
    name,
    methods,
    websocket,
    schedule,
    timezone,
    retries,
    timeout,
    origins,
    ...(version === undefined ? {} : { version }),
  }
}
