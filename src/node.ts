/** `svc/node`: the Node-only half (server, static files, loaders). */
export { startSvcServer } from './node/server.ts'
export type { SvcServer, SvcServerOptions, WebSocketOptions } from './node/options.ts'
export { DEFAULT_PORT, DEFAULT_SHUTDOWN_TIMEOUT_MS } from './node/options.ts'
export { loadApiRoutes, loadPages, type LoadOptions } from './node/loaders.ts'
export { DEFAULT_CLOSE_CODE } from './node/websocket.ts'
export { SqliteRunStore, type SqliteRunStoreOptions } from './node/sqlite-store.ts'
export { storeFromEnv, STORE_URL_ENV, type StoreFromEnv, type StoreFromEnvOptions } from './node/store-url.ts'
export { DASHBOARD_PAGE } from './runtime/dashboard/page.ts'
