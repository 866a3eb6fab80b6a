/**
 * What `svcjs/node` exports besides the app loaders. The loaders hand app code
 * these exports and their own as `svcjs/node`, the very objects this process
 * loaded, so they take them from here rather than from the entry, which
 * re-exports the loaders.
 */
export { startSvcServer } from './server.ts'
export type { SvcServer, SvcServerOptions, WebSocketOptions } from './options.ts'
export { DEFAULT_PORT, DEFAULT_SHUTDOWN_TIMEOUT_MS } from './options.ts'
export { DEFAULT_CLOSE_CODE } from './websocket.ts'
export { SqliteRunStore, type SqliteRunStoreOptions } from '../sqlite/store.ts'
export { storeFromEnv, STORE_URL_ENV, type StoreFromEnv, type StoreFromEnvOptions } from './store-url.ts'
export { DASHBOARD_PAGE } from '../runtime/dashboard/page.ts'
