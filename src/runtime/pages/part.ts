/**
 * Pages as a part of a handler (`HostParts.pages`): rendering server and
 * hybrid pages, their ISR cache and `POST /__svc/revalidate`. A host built
 * for an app without pages leaves it out, and its bundle with it. Edge-safe.
 */
import { createIsrCache } from './isr.ts'
import { mountPages, planPages } from './render.ts'
import { revalidateHandler } from './revalidate.ts'

export interface PagesPart {
  createCache: typeof createIsrCache
  plan: typeof planPages
  mount: typeof mountPages
  revalidate: typeof revalidateHandler
}

export const PAGES: PagesPart = { createCache: createIsrCache, plan: planPages, mount: mountPages, revalidate: revalidateHandler }
