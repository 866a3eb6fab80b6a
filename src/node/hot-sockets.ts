/**
 * The open WebSockets of hot routes (docs/routes.md "Hot routes"), the same
 * on Node, Bun and Deno: what the Node layer (./websocket.ts) and the Bun
 * and Deno layer (src/serve/websocket.ts) share, each adding only what its
 * runtime does differently.
 *
 * Each upgrade request goes through the core handler first, like any
 * request: `onRequest` hooks, routing, route params and the origin check
 * (src/runtime/origins.ts) all apply, and whatever the handler answers (403,
 * 404, 401…) is the response. Only when a hot route accepts does the
 * runtime complete the handshake; `websocket(peer, req)` then runs on open.
 */
import type { Hooks, Peer } from 'crossws'
import { acceptedUpgrade, expectUpgrade, type AcceptedUpgrade } from '../runtime/app/upgrade.ts'
import { describe } from '../runtime/describe.ts'
import type { CoreHandler } from '../runtime/handler.ts'
import type { Logger, RequestInfo } from '../types.ts'
import { HotRoutePeer, type PeerTransport } from './hot-peer.ts'
import { jsonResponse } from './socket-response.ts'

/** The default close code of `closeWebSockets` is 1001 (going away, RFC 6455 §7.4.1). */
export const DEFAULT_CLOSE_CODE = 1001

/** 1009: message too big (RFC 6455 §7.4.1). */
export const TOO_BIG = 1009

/** What every WebSocket layer is given by its server. */
export interface HotSocketsOptions {
  /** The current core handler (the Node server swaps it on reload). */
  handler: () => CoreHandler
  logger: Logger
  /** True while the server drains: upgrades then get 503. */
  draining: () => boolean
  /** Largest inbound message; larger ones close the connection with 1009. */
  maxMessageBytes: number
  /** Most bytes a peer may have queued for sending before it is dropped. */
  maxBufferedBytes: number
}

/** What a layer's runtime does its own way. */
export interface HotSocketsRuntime<Extra> {
  transport: PeerTransport
  /**
   * Runs as a connection opens, with what `answer()` was given for it;
   * what it returns runs as the connection closes.
   */
  watch?: (peer: Peer, extra: Extra) => () => void
}

interface Connection {
  accepted: AcceptedUpgrade
  extra: unknown
  peer?: HotRoutePeer
  unwatch?: () => void
}

const connectionOf = (peer: Peer) => peer.context.svc as Connection | undefined

/**
 * The hot-route sockets of one server. A layer extends it with its
 * runtime's crossws adapter; `Extra` is what the layer knows of a
 * connection before it opens (the Node layer: its socket).
 */
export class HotSockets<Extra = undefined> {
  /**
   * The crossws hooks every runtime shares: `upgrade`, `open`, `close` and
   * `error`. A layer adds `message` (`deliver`), its runtime's way of
   * reading a frame.
   */
  protected readonly sharedHooks: Required<Pick<Hooks, 'upgrade' | 'open' | 'close' | 'error'>>
  readonly #options: HotSocketsOptions
  readonly #open = new Set<HotRoutePeer>()
  #onEmpty: (() => void)[] = []
  readonly #pending = new WeakMap<Request, Connection>()

  constructor(options: HotSocketsOptions, runtime: HotSocketsRuntime<Extra>) {
    this.#options = options
    const { logger } = options
    const { watch } = runtime
    const peerOptions = { transport: runtime.transport, logger, maxBufferedBytes: options.maxBufferedBytes }
    const open = this.#open
    const failOpen = (peer: Peer, conn: Connection, error: unknown) => {
      logger.error(`[svc] hot route ${conn.accepted.route}: websocket() failed:`, error)
      // 1011: the server hit a condition that prevented it from fulfilling the request (RFC 6455 §7.4.1).
      peer.close(1011, 'Internal error')
    }
    this.sharedHooks = {
      upgrade: (request) => {
        const conn = this.#pending.get(request)
        // Only requests the app accepted reach crossws; anything else is a bug, not a client error.
        if (!conn) return new Response('Upgrade not accepted', { status: 500 })
        return { context: { svc: conn } }
      },
      open: (peer) => {
        const conn = connectionOf(peer)!
        const hot = new HotRoutePeer(peer, conn.accepted.route, peerOptions)
        conn.peer = hot
        open.add(hot)
        conn.unwatch = watch?.(peer, conn.extra as Extra)
        let out: unknown
        try {
          out = conn.accepted.websocket(hot, conn.accepted.req)
        } catch (error) {
          return failOpen(peer, conn, error)
        }
        if (out instanceof Promise) {
          hot.hold()
          out.then(
            () => hot.release(),
            (error) => failOpen(peer, conn, error),
          )
        }
      },
      close: (peer, details) => {
        const conn = connectionOf(peer)
        const hot = conn?.peer
        // Once per connection, whatever the runtime reports.
        if (!hot || !open.delete(hot)) return
        conn.unwatch?.()
        hot.closed(details.code ?? 1005, details.reason ?? '')
        if (open.size === 0 && this.#onEmpty.length > 0) {
          const waiting = this.#onEmpty
          this.#onEmpty = []
          for (const resolve of waiting) resolve()
        }
      },
      error: (peer, error) => {
        logger.error(`[svc] hot route ${connectionOf(peer)?.accepted.route ?? new URL(peer.request.url).pathname}: WebSocket error:`, error)
      },
    }
  }

  /**
   * Answers an upgrade request through the core handler: the response to
   * send when no hot route accepted it, else `undefined`, and the runtime
   * then completes the handshake.
   */
  async answer(request: Request, info: RequestInfo, extra: Extra): Promise<Response | undefined> {
    const { draining, handler, logger } = this.#options
    if (draining()) return jsonResponse(503, 'SHUTTING_DOWN', 'The server is shutting down')
    expectUpgrade(request)
    let res: Response
    try {
      res = await handler().fetch(request, info)
    } catch (error) {
      logger.error(`[svc] upgrade of ${new URL(request.url).pathname} failed:`, error)
      res = jsonResponse(500, 'INTERNAL_ERROR', 'Internal Server Error')
    }
    const accepted = acceptedUpgrade(request)
    if (!accepted) return res
    this.#pending.set(request, { accepted, extra })
    return undefined
  }

  /** Hands a frame to the route's message listeners. */
  deliver(peer: Peer, data: string | Uint8Array): void {
    connectionOf(peer)?.peer?.deliver(data)
  }

  /** Logs a message over `maxMessageBytes` that closed `peer`'s connection: the client's doing, worth a warning, not an error. */
  tooBig(peer: Peer): void {
    this.#options.logger.warn(
      `[svc] hot route ${connectionOf(peer)?.accepted.route}: a message over websocket.maxMessageBytes (${this.#options.maxMessageBytes}) closed the connection with 1009`,
    )
  }

  /** Starts the closing handshake on every open socket, or on those of the routes `filter` accepts. */
  closeAll(code: number, reason?: string, filter?: (route: string) => boolean): void {
    for (const peer of this.#open) if (filter === undefined || filter(peer.route)) peer.close(code, reason)
  }

  /** A server's `closeWebSockets(code, reason, filter)`: `closeAll`, its arguments checked. */
  closeWebSockets(code: number = DEFAULT_CLOSE_CODE, reason?: string, filter?: (route: string) => boolean): void {
    checkCloseCode(code, reason)
    if (filter !== undefined && typeof filter !== 'function') {
      throw new TypeError(`closeWebSockets(code, reason, filter): filter must be a function of the route path (got ${describe(filter)})`)
    }
    this.closeAll(code, reason, filter)
  }

  /** Drops every socket at once (the shutdown deadline passed). */
  terminateAll(): void {
    for (const peer of this.#open) peer.drop(DEFAULT_CLOSE_CODE, 'Server shutting down')
  }

  /** Open sockets. */
  get size(): number {
    return this.#open.size
  }

  /** Resolves `true` once no socket is open, or `false` at `deadline` (epoch ms). */
  waitClosed(deadline: number): Promise<boolean> {
    if (this.#open.size === 0) return Promise.resolve(true)
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve(this.#open.size === 0), Math.max(0, deadline - Date.now()))
      this.#onEmpty.push(() => {
        clearTimeout(timer)
        resolve(true)
      })
    })
  }
}

/** RFC 6455 §7.4: 1000, 1001-1003, 1007-1014 are sendable; 3000-4999 are for libraries and apps. */
function checkCloseCode(code: number, reason: string | undefined): void {
  const ok =
    Number.isInteger(code) &&
    (code === 1000 || (code >= 1001 && code <= 1003) || (code >= 1007 && code <= 1014) || (code >= 3000 && code <= 4999))
  if (!ok) throw new RangeError(`closeWebSockets(code): code must be 1000-1003, 1007-1014 or 3000-4999 (got ${describe(code)})`)
  if (reason !== undefined && (typeof reason !== 'string' || new TextEncoder().encode(reason).length > 123)) {
    // A close frame's payload is at most 125 bytes: 2 for the code, 123 for the reason (RFC 6455 §5.5).
    throw new RangeError(`closeWebSockets(code, reason): reason must be a string of at most 123 bytes (got ${describe(reason)})`)
  }
}
