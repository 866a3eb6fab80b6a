/** `svcjs/node`: the Node-only half (server, static files, loaders). */
import './runtime/node-version.ts'
// A new export goes in node/api.ts: app code that imports `svcjs/node` gets
// that module's exports and the loaders' (node/loaders.ts).
export * from './node/api.ts'
export { loadApiRoutes, loadEvents, loadPages, type LoadOptions } from './node/loaders.ts'
export { loadTelemetry, TELEMETRY_ENV } from './node/telemetry.ts'
