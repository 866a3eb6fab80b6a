/**
 * WebSocket upgrades for hot routes on Bun and Deno (docs/routes.md "Hot
 * routes"), on crossws's hooks, as the Node server does on its Node adapter.
 *
 * Each upgrade request goes through the core handler first, like any
 * request: `onRequest` hooks, routing, route params and the origin check
 * (src/runtime/origins.ts) all apply, and whatever the handler answers (403,
 * 404, 401…) is the response. Only when a hot route accepts does the runtime
 * complete the handshake; `websocket(peer, req)` then runs on open.
 */
import type { Hooks, Message, Peer } from 'crossws'
import type { ServerRequest } from 'srvx'
import { acceptedUpgrade, expectUpgrade, type AcceptedUpgrade } from '../runtime/app/upgrade.ts'
import type { HotPeer } from '../runtime/app/types.ts'
import type { SvcHandler } from '../runtime/handler.ts'
import type { Logger, RequestInfo } from '../types.ts'
import { jsonResponse } from '../node/socket-response.ts'
import type { Listener, WebHost } from './host.ts'

// biome-ignore lint/suspicious/noExplicitAny: a route's listener takes the arguments of its event (a message, or a code and reason)
type PeerListener = (...args: any[]) => unknown

/** 1009: message too big (RFC 6455 §7.4.1). */
const TOO_BIG = 1009

/** Close reason of a peer dropped for a full send buffer; the route's close listeners get it with 1008. */
const BUFFER_FULL_REASON = 'Send buffer full'

/** The `peer` a hot route's `websocket()` gets: a thin layer over the crossws peer. */
class WebHotPeer implements HotPeer {
  readonly #peer: Peer
  readonly #host: WebHost
  /** The route's URL pattern. */
  readonly route: string
  readonly #logger: Logger
  readonly #maxBufferedBytes: number
  #message: PeerListener[] = []
  #close: PeerListener[] = []
  /** Frames that arrive while an async `websocket()` has not returned yet. */
  #queue: (string | Uint8Array)[] | undefined
  #closed = false
  /** Dropped for a full send buffer. */
  #overflowed = false

  constructor(peer: Peer, route: string, host: WebHost, logger: Logger, maxBufferedBytes: number) {
    this.#peer = peer
    this.route = route
    this.#host = host
    this.#logger = logger
    this.#maxBufferedBytes = maxBufferedBytes
  }

  get id(): string {
    return this.#peer.id
  }

  get remoteAddress(): string | undefined {
    return this.#peer.remoteAddress
  }

  get bufferedAmount(): number {
    return this.#peer.bufferedAmount
  }

  send(data: unknown): void {
    if (this.#overflowed || this.#closed) return
    this.#peer.send(data)
    if (this.#peer.bufferedAmount > this.#maxBufferedBytes) this.#overflow()
  }

  /**
   * A client that stops reading makes every frame sent to it pile up in the
   * server; a close frame would wait behind all of it. The connection is
   * dropped instead, and the route's close listeners get 1008 (policy
   * violation, RFC 6455 §7.4.1).
   */
  #overflow(): void {
    this.#overflowed = true
    this.#logger.warn(
      `[svc] hot route ${this.route}: peer ${this.id} is not reading; ${this.#peer.bufferedAmount} bytes are queued, past websocket.maxBufferedBytes (${this.#maxBufferedBytes}); dropping the connection. Watch peer.bufferedAmount to send no faster than the client reads.`,
    )
    this.drop(1008, BUFFER_FULL_REASON)
  }

  drop(code: number, reason: string): void {
    this.#host.drop(this.#peer, code, reason)
  }

  on(event: 'message' | 'close', listener: PeerListener): this {
    if (typeof listener !== 'function') {
      throw new TypeError(`peer.on("${event}", listener): listener must be a function (got ${typeof listener})`)
    }
    if (event === 'message') this.#message.push(listener)
    else if (event === 'close') this.#close.push(listener)
    else throw new TypeError(`peer.on(event): event must be "message" or "close" (got ${JSON.stringify(event)})`)
    return this
  }

  off(event: 'message' | 'close', listener: PeerListener): this {
    const list = event === 'message' ? this.#message : this.#close
    const i = list.indexOf(listener)
    if (i !== -1) list.splice(i, 1)
    return this
  }

  close(code?: number, reason?: string): void {
    this.#peer.close(code, reason)
  }

  /** Holds frames until `release()`, for handlers that register listeners after an `await`. */
  hold(): void {
    this.#queue = []
  }

  release(): void {
    const queue = this.#queue
    this.#queue = undefined
    if (queue) for (const data of queue) this.deliver(data)
  }

  deliver(data: string | Uint8Array): void {
    if (this.#queue !== undefined) {
      this.#queue.push(data)
      return
    }
    const list = this.#message
    for (let i = 0; i < list.length; i++) this.#call(list[i], 'message', data)
  }

  closed(code: number, reason: string): void {
    if (this.#closed) return
    this.#closed = true
    this.#queue = undefined
    if (this.#overflowed) {
      code = 1008
      reason = BUFFER_FULL_REASON
    }
    for (const listener of this.#close) this.#call(listener, 'close', code, reason)
  }

  #call(listener: PeerListener, event: 'message' | 'close', first: unknown, second?: unknown): void {
    try {
      const out = event === 'message' ? listener(first) : listener(first, second)
      if (out instanceof Promise) out.catch((error) => this.#fail(event, error))
    } catch (error) {
      this.#fail(event, error)
    }
  }

  #fail(event: string, error: unknown): void {
    this.#logger.error(`[svc] hot route ${this.route}: a "${event}" listener failed:`, error)
  }
}

interface Connection {
  accepted: AcceptedUpgrade
  peer?: WebHotPeer
}

export interface WebSocketLayerOptions {
  host: WebHost
  /** The current core handler. */
  handler: () => SvcHandler
  logger: Logger
  /** True while the server drains: upgrades then get 503. */
  draining: () => boolean
  /** Largest inbound message; larger ones close the connection with 1009. */
  maxMessageBytes: number
  /** Most bytes a peer may have queued for sending before it is dropped. */
  maxBufferedBytes: number
}

export interface WebSocketLayer {
  /** The crossws hooks the runtime's adapter calls. */
  readonly hooks: Partial<Hooks>
  /** Answers an upgrade request through the core handler, and completes the handshake once a hot route accepts it. */
  upgrade(request: ServerRequest, info: RequestInfo, listener: Listener): Promise<Response | undefined>
  /** Starts the closing handshake on every open socket, or on those of the routes `filter` accepts. */
  closeAll(code: number, reason?: string, filter?: (route: string) => boolean): void
  /** Drops every socket at once (shutdown deadline passed). */
  dropAll(): void
  /** Resolves `true` once no socket is open, or `false` at `deadline` (epoch ms). */
  waitClosed(deadline: number): Promise<boolean>
}

export function createWebSocketLayer(options: WebSocketLayerOptions): WebSocketLayer {
  const { host, handler, logger, maxMessageBytes } = options
  const open = new Set<WebHotPeer>()
  let onEmpty: (() => void)[] = []
  const pending = new WeakMap<Request, Connection>()

  function failOpen(peer: Peer, conn: Connection, error: unknown): void {
    logger.error(`[svc] hot route ${conn.accepted.route}: websocket() failed:`, error)
    // 1011: the server hit a condition that prevented it from fulfilling the request (RFC 6455 §7.4.1).
    peer.close(1011, 'Internal error')
  }

  const hooks: Partial<Hooks> = {
    upgrade(request) {
      const conn = pending.get(request)
      // Only requests the app accepted reach crossws; anything else is a bug, not a client error.
      if (!conn) return new Response('Upgrade not accepted', { status: 500 })
      return { context: { svc: conn } }
    },
    open(peer) {
      const conn = peer.context.svc as Connection
      const hot = new WebHotPeer(peer, conn.accepted.route, host, logger, options.maxBufferedBytes)
      conn.peer = hot
      open.add(hot)
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
    message(peer, message: Message) {
      const hot = (peer.context.svc as Connection).peer
      const data = message.rawData as string | Uint8Array | ArrayBuffer
      if (!host.limitsMessages && isOver(data, maxMessageBytes)) {
        peer.close(TOO_BIG, 'Message too big')
        return
      }
      // Text frames arrive as a string; binary ones as a Uint8Array on Bun and an ArrayBuffer on Deno.
      hot?.deliver(data instanceof ArrayBuffer ? new Uint8Array(data) : data)
    },
    close(peer, details) {
      const conn = peer.context.svc as Connection | undefined
      const hot = conn?.peer
      if (!hot) return
      if (!open.delete(hot)) return
      const code = details.code ?? 1005
      if (code === TOO_BIG) {
        // The client's doing: worth a warning, not an error.
        logger.warn(
          `[svc] hot route ${hot.route}: a message over websocket.maxMessageBytes (${maxMessageBytes}) closed the connection with 1009`,
        )
      }
      hot.closed(code, details.reason ?? '')
      if (open.size === 0 && onEmpty.length > 0) {
        const waiting = onEmpty
        onEmpty = []
        for (const resolve of waiting) resolve()
      }
    },
    error(peer, error) {
      const conn = peer.context.svc as Connection | undefined
      logger.error(`[svc] hot route ${conn?.accepted.route ?? new URL(peer.request.url).pathname}: WebSocket error:`, error)
    },
  }

  return {
    hooks,
    async upgrade(request, info, listener) {
      if (options.draining()) return jsonResponse(503, 'SHUTTING_DOWN', 'The server is shutting down')
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
      pending.set(request, { accepted })
      return listener.upgrade(request)
    },
    closeAll(code, reason, filter) {
      for (const peer of open) if (filter === undefined || filter(peer.route)) peer.close(code, reason)
    },
    dropAll() {
      for (const peer of open) peer.drop(1001, 'Server shutting down')
    },
    waitClosed(deadline) {
      if (open.size === 0) return Promise.resolve(true)
      return new Promise((resolve) => {
        const timer = setTimeout(() => resolve(open.size === 0), Math.max(0, deadline - Date.now()))
        onEmpty.push(() => {
          clearTimeout(timer)
          resolve(true)
        })
      })
    },
  }
}

/**
 * Whether a message is larger than `limit` bytes. A string's UTF-8 form
 * takes at most three bytes per UTF-16 unit, so most strings are judged
 * without encoding them.
 */
function isOver(data: string | Uint8Array | ArrayBuffer, limit: number): boolean {
  if (typeof data !== 'string') return data.byteLength > limit
  if (data.length * 3 <= limit) return false
  return new TextEncoder().encode(data).byteLength > limit
}
