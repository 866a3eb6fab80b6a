/** What the HTTP surface takes from its host: facts about each request and the app's global hooks. */

/** Extra information about the request that only the host knows. */
export interface RequestInfo {
  /** Peer address from the socket; absent on edge and function platforms. */
  remoteAddress?: string
  /**
   * Keeps work started by a request (a background ISR render) alive after
   * the response is sent; edge targets pass their `ctx.waitUntil`.
   */
  waitUntil?: (promise: Promise<unknown>) => void
}

/**
 * Global hooks around HTTP requests. Each is an array, run in order.
 * - `onRequest(req)` may return a `Response` to short-circuit (auth, for example).
 * - `onError(error, req)` may return a `Response` to replace the default 500.
 * - `onResponse(req, res, { durationMs })` observes, and may return a replacement.
 */
export interface GlobalHooks {
  onRequest?: Array<(req: Request) => void | Response | Promise<void | Response>>
  onError?: Array<(error: unknown, req: Request) => void | Response | Promise<void | Response>>
  onResponse?: Array<(req: Request, res: Response, info: { durationMs: number }) => void | Response | Promise<void | Response>>
}
