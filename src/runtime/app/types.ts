/**
 * Public types of the API application: route handlers, the `reply` helper,
 * hot-route peers and the options of `createApiApp`.
 */
import type { GlobalHooks, Logger, RuntimeApiRoute } from '../types.ts'
import type { ResponseClass, SvcRequest } from '../http/types.ts'
import type { RevalidateWebhook } from '../pages/revalidate.ts'

/**
 * The second argument of a route handler. Builds the response; `status()`
 * and `header()` also apply when the handler returns a plain value.
 */
export interface Reply {
  /** Sets the status of the response this reply builds. Chainable. */
  status(code: number): Reply
  /** Sets a response header (`set-cookie` is appended, others replaced). Chainable. */
  header(name: string, value: string): Reply
  /** `application/json` response. */
  json(data: unknown, status?: number): Response
  /** `text/plain; charset=utf-8` response. */
  text(body: string, status?: number): Response
  /** `text/html; charset=utf-8` response. */
  html(body: string, status?: number): Response
  /** Redirect with a `Location` header. `status` defaults to 302. */
  redirect(url: string, status?: number): Response
}

/**
 * A route's method export. It may return a `Response`, a value built with
 * `reply`, or any other value, which is sent as JSON. Returning nothing sends
 * what `reply` last built, else `204 No Content`.
 */
export type RouteHandler = (req: SvcRequest, reply: Reply) => unknown

/**
 * What a hot route's `websocket(peer, req)` receives as `peer`: one open
 * connection.
 */
export interface HotPeer {
  /** Unique id of the connection. */
  readonly id: string
  /** Peer address from the socket. */
  readonly remoteAddress: string | undefined
  /**
   * Sends a frame: strings as text, `ArrayBuffer`/typed arrays as binary,
   * plain objects as JSON text. Fire-and-forget: once more than
   * `websocket.maxBufferedBytes` (8 MiB by default) wait to be sent, the
   * connection is dropped and close listeners get 1008. Watch
   * `bufferedAmount` to send no faster than the client reads.
   */
  send(data: unknown): void
  /** Bytes queued by `send()` and not yet handed to the network. */
  readonly bufferedAmount: number
  /** Text frames arrive as a string, binary frames as a `Uint8Array`. */
  on(event: 'message', listener: (data: string | Uint8Array) => void): HotPeer
  /** Fires once when the connection is gone, with the close code and reason. */
  on(event: 'close', listener: (code: number, reason: string) => void): HotPeer
  off(event: 'message' | 'close', listener: (...args: never[]) => void): HotPeer
  /** Starts the closing handshake (RFC 6455 §7.1.2). */
  close(code?: number, reason?: string): void
}

/** A hot route's `websocket` export. Called once per connection, on open. */
export type WebSocketHandler = (peer: HotPeer, req: SvcRequest) => unknown

export interface ApiAppOptions {
  /** API routes with loaded module exports. Task-kind routes are skipped. */
  routes: readonly RuntimeApiRoute[]
  /**
   * `{ onRequest?, onError?, onResponse? }`, each an array of hooks run in order.
   * @default no hooks
   */
  globalHooks?: GlobalHooks
  /**
   * When given, mounts `POST /__svc/revalidate`, gated like the task admin surface.
   * @default unset (no revalidate endpoint)
   */
  revalidateWebhook?: RevalidateWebhook
  /**
   * Environment read for `SVC_TASK_SECRET` and `NODE_ENV`.
   * The `env` argument of `fetch` (edge bindings) is read too and wins.
   * @default globalThis.process?.env, or {} where there is no `process`
   */
  env?: Record<string, string | undefined>
  /**
   * Adds the error message and stack to 500 bodies.
   * @default env.NODE_ENV === 'development'
   */
  dev?: boolean
  /**
   * Largest JSON body, in bytes, read for `schema.body` validation and the
   * revalidate endpoint; larger ones get 413 `PAYLOAD_TOO_LARGE`.
   * @default 1048576 (1 MiB)
   */
  bodyLimit?: number
  /**
   * Receives unhandled errors, with the method and path they came from.
   * @default console
   */
  logger?: Logger
  /**
   * The constructor responses are built with. Note: on Node, srvx's
   * `FastResponse` is written to the socket without building a full Web
   * `Response`, which roughly doubles throughput.
   * @default the `Response` global at the time each response is built
   */
  responseClass?: ResponseClass
}
