import type { HttpMethod } from './types/routes.ts'

/** Every `HttpMethod`, for code that looks for each handler a route module exports. */
export const HTTP_METHODS: readonly HttpMethod[] = ['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'HEAD', 'OPTIONS']
