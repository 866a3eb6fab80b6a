// Public exports of the HTTP application.
export { createApiApp, type ApiApp } from './create.ts'
export { createSvcHandler, type SvcHandler, type SvcHandlerOptions } from '../handler.ts'
export { FRAMEWORK } from './health.ts'
export { MemoryCacheStore, DEFAULT_MAX_ENTRIES } from '../pages/cache-store.ts'
export type { CacheEntry, CacheStore, MemoryCacheStoreOptions } from '../pages/cache-store.ts'
export type { SvcCacheConfig, RevalidateResult } from '../pages/isr.ts'
export { DEFAULT_BODY_LIMIT } from '../admin/body.ts'
export type { RunEventsOptions } from '../admin/events.ts'
export type {
  ApiAppOptions,
  HotPeer,
  Reply,
  ResponseClass,
  RevalidateWebhook,
  RouteHandler,
  SvcRequest,
  WebSocketHandler,
} from './types.ts'
