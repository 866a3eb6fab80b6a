/**
 * WebSocket upgrades for hot routes, on crossws's Node adapter (docs/routes.md
 * "Hot routes").
 *
 * Each upgrade request goes through the core handler first, like any
 * request: `onRequest` hooks, routing, route params and the origin check all
 * apply, and whatever the handler answers (403, 404, 401…) is written back
 * on the socket before any handshake. Only when a hot route accepts does
 * crossws complete the handshake; `websocket(peer, req)` then runs on open.
 */
import type { IncomingMessage, Server } from 'node:http'
import type { Socket } from 'node:net'
import type { Duplex } from 'node:stream'
import type { Message, Peer } from 'crossws'
import nodeAdapter from 'crossws/adapters/node'
import { NodeRequest } from 'srvx/node'
import { acceptedUpgrade, expectUpgrade, type AcceptedUpgrade } from '../runtime/app/upgrade.ts'
import type { HotPeer } from '../runtime/app/types.ts'
import type { SvcHandler } from '../runtime/handler.ts'
import { describe } from '../runtime/describe.ts'
import type { Logger, RequestInfo } from '../types.ts'
import { createLivenessSweep, LIVENESS_INTERVAL_MS, type Watched } from './liveness.ts'
import { jsonResponse, writeResponse } from './socket-response.ts'

/** The default close code of `closeWebSockets` is 1001 (going away, RFC 6455 §7.4.1). */
export const DEFAULT_CLOSE_CODE = 1001

// biome-ignore lint/suspicious/noExplicitAny: a route's listener takes the arguments of its event (a message, or a code and reason)
type Listener = (...args: any[]) => unknown

/** What `ws` says of a message over `maxPayload`. */
const MESSAGE_TOO_BIG = 'Max payload size exceeded'

/** Close reason of a peer dropped for a full send buffer; the route's close listeners get it with 1008. */
const BUFFER_FULL_REASON = 'Send buffer full'

/**
 * Sends a string as its UTF-8 bytes in a text frame. `ws` writes a frame as
 * its header and its payload in one corked write; Node's socket writes a
 * list of Buffers as they are, but for a list holding a string it allocates
 * a backing store and encodes into it on every write, which costs more than
 * encoding the string into a Buffer from Node's pool first. crossws passes
 * its options on to `ws`'s `send`, where `binary: false` keeps the text opcode.
 */
const TEXT_FRAME = { binary: false } as { compress?: boolean }

/** The `peer` a hot route's `websocket()` gets: a thin layer over the crossws peer. */
class NodeHotPeer implements HotPeer {
  readonly #peer: Peer
  /** The route's URL pattern. */
  readonly route: string
  readonly #logger: Logger
  readonly #maxBufferedBytes: number
  #message: Listener[] = []
  #close: Listener[] = []
  /** Frames that arrive while an async `websocket()` has not returned yet. */
  #queue: (string | Uint8Array)[] | undefined
  #closed = false
  /** Dropped for a full send buffer. */
  #overflowed = false

  constructor(peer: Peer, route: string, logger: Logger, maxBufferedBytes: number) {
    this.#peer = peer
    this.route = route
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
    if (this.#overflowed) return
    // crossws's Node peer answers with the bytes still queued, ws's bufferedAmount.
    const queued = typeof data === 'string' ? this.#peer.send(Buffer.from(data), TEXT_FRAME) : this.#peer.send(data)
    if ((typeof queued === 'number' ? queued : this.#peer.bufferedAmount) > this.#maxBufferedBytes) this.#overflow()
  }

  /**
   * A client that stops reading makes every frame sent to it pile up in the
   * server. The queue only grows this long when the socket takes bytes more
   * slowly than they are sent (or one message is larger than the cap), so a
   * close frame would wait behind all of it, maybe forever: the connection
   * is dropped instead, which frees the queue at once, and the route's close
   * listeners get 1008 (policy violation, RFC 6455 §7.4.1).
   */
  #overflow(): void {
    this.#overflowed = true
    this.#logger.warn(
      `[svc] hot route ${this.route}: peer ${this.id} is not reading; ${this.#peer.bufferedAmount} bytes are queued, past websocket.maxBufferedBytes (${this.#maxBufferedBytes}); dropping the connection. Watch peer.bufferedAmount to send no faster than the client reads.`,
    )
    this.#peer.terminate()
  }

  on(event: 'message' | 'close', listener: Listener): this {
    if (typeof listener !== 'function') {
      throw new TypeError(`peer.on("${event}", listener): listener must be a function (got ${typeof listener})`)
    }
    if (event === 'message') this.#message.push(listener)
    else if (event === 'close') this.#close.push(listener)
    else throw new TypeError(`peer.on(event): event must be "message" or "close" (got ${JSON.stringify(event)})`)
    return this
  }

  off(event: 'message' | 'close', listener: Listener): this {
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

  /** Calls a listener with the arguments of its event: a message, or a close code and reason. */
  #call(listener: Listener, event: 'message' | 'close', first: unknown, second?: unknown): void {
    try {
      // Fixed arguments rather than a rest array: this runs for every message.
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
  socket: Socket
  peer?: NodeHotPeer
  watched?: Watched
}

export interface WebSocketLayer {
  /** Takes the `upgrade` requests of `server`. */
  attach(server: Server): void
  /** The `upgrade` listener of the HTTP server. */
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void>
  /** Starts the closing handshake on every open socket, or on those of the routes `filter` accepts. */
  closeAll(code: number, reason?: string, filter?: (route: string) => boolean): void
  /** Drops every socket at once (shutdown deadline passed). */
  terminateAll(): void
  /** Open sockets. */
  readonly size: number
  /** Resolves `true` once no socket is open, or `false` at `deadline` (epoch ms). */
  waitClosed(deadline: number): Promise<boolean>
  /** Stops the liveness sweep and closes what is left. */
  dispose(): Promise<void>
}

export interface WebSocketLayerOptions {
  /** The current core handler (the server may swap it on reload). */
  handler: () => SvcHandler
  logger: Logger
  /** True while the server drains: upgrades then get 503. */
  draining: () => boolean
  /** Largest inbound message; larger ones close the connection with 1009. */
  maxMessageBytes: number
  /** Most bytes a peer may have queued for sending before it is dropped. */
  maxBufferedBytes: number
  /** How often each connection is pinged; one silent for a whole interval after a ping is dropped. @default 30000 */
  livenessIntervalMs?: number
}

export function createWebSocketLayer(options: WebSocketLayerOptions): WebSocketLayer {
  const { handler, logger } = options
  const open = new Set<NodeHotPeer>()
  let onEmpty: (() => void)[] = []
  const pending = new WeakMap<Request, Connection>()
  const liveness = createLivenessSweep(options.livenessIntervalMs ?? LIVENESS_INTERVAL_MS)

  const ws = nodeAdapter({
    // `ws` refuses a message past maxPayload as its frames arrive, before
    // buffering it, and closes with 1009 (RFC 6455 §7.4.1).
    serverOptions: { maxPayload: options.maxMessageBytes },
    // The liveness sweep is svc's own (./liveness.ts), free of a per-message listener.
    idleTimeout: 0,
    hooks: {
      upgrade(request) {
        const conn = pending.get(request)
        // Only requests the app accepted reach crossws; anything else is a bug, not a client error.
        if (!conn) return new Response('Upgrade not accepted', { status: 500 })
        return { context: { svc: conn } }
      },
      open(peer) {
        const conn = peer.context.svc as Connection
        const hot = new NodeHotPeer(peer, conn.accepted.route, logger, options.maxBufferedBytes)
        conn.peer = hot
        open.add(hot)
        const { socket } = conn
        conn.watched = { bytesRead: () => socket.bytesRead, ping: () => peer.ping(), terminate: () => peer.terminate() }
        liveness.watch(conn.watched)
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
        // Text frames arrive as a string, binary ones as a Buffer (a Uint8Array).
        ;(peer.context.svc as Connection).peer?.deliver(message.rawData as string | Uint8Array)
      },
      close(peer, details) {
        const conn = peer.context.svc as Connection | undefined
        const hot = conn?.peer
        if (!hot) return
        liveness.unwatch(conn.watched!)
        open.delete(hot)
        hot.closed(details.code ?? 1005, details.reason ?? '')
        if (open.size === 0 && onEmpty.length > 0) {
          const waiting = onEmpty
          onEmpty = []
          for (const resolve of waiting) resolve()
        }
      },
      error(peer, error) {
        const conn = peer.context.svc as Connection | undefined
        if (String(error.message).includes(MESSAGE_TOO_BIG)) {
          // The client's doing, already answered with 1009: worth a warning, not an error.
          logger.warn(
            `[svc] hot route ${conn?.accepted.route}: a message over websocket.maxMessageBytes (${options.maxMessageBytes}) closed the connection with 1009`,
          )
          return
        }
        logger.error(`[svc] hot route ${conn?.accepted.route ?? new URL(peer.request.url).pathname}: WebSocket error:`, error)
      },
    },
  })

  function failOpen(peer: Peer, conn: Connection, error: unknown): void {
    logger.error(`[svc] hot route ${conn.accepted.route}: websocket() failed:`, error)
    // 1011: the server hit a condition that prevented it from fulfilling the request (RFC 6455 §7.4.1).
    peer.close(1011, 'Internal error')
  }

  const layer: WebSocketLayer = {
    attach(server) {
      server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
        layer.handleUpgrade(req, socket, head).catch((error) => {
          logger.error(`[svc] upgrade of ${req.url} failed:`, error)
          socket.destroy()
        })
      })
    },
    async handleUpgrade(req, socket, head) {
      socket.on('error', (error) => logger.warn(`[svc] upgrade socket error on ${req.url}:`, error))
      if (options.draining()) {
        return writeResponse(socket, jsonResponse(503, 'SHUTTING_DOWN', 'The server is shutting down'))
      }
      const request = new NodeRequest({ req }) as unknown as Request
      expectUpgrade(request)
      const info: RequestInfo = { remoteAddress: req.socket.remoteAddress }
      let res: Response
      try {
        res = await handler().fetch(request, info)
      } catch (error) {
        logger.error(`[svc] upgrade of ${req.url} failed:`, error)
        res = jsonResponse(500, 'INTERNAL_ERROR', 'Internal Server Error')
      }
      const accepted = acceptedUpgrade(request)
      if (!accepted) return writeResponse(socket, res)
      // An HTTP server's upgrade socket is a net.Socket (a tls.TLSSocket over HTTPS).
      pending.set(request, { accepted, socket: socket as Socket })
      await ws.handleUpgrade(req, socket, head, request)
    },
    closeAll(code, reason, filter) {
      for (const peer of open) if (filter === undefined || filter(peer.route)) peer.close(code, reason)
    },
    terminateAll() {
      ws.closeAll(undefined, undefined, true)
    },
    get size() {
      return open.size
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
    dispose: () => {
      liveness.stop()
      return ws.close()
    },
  }
  return layer
}

/** RFC 6455 §7.4: 1000, 1001-1003, 1007-1014 are sendable; 3000-4999 are for libraries and apps. */
export function checkCloseCode(code: number, reason: string | undefined): void {
  const ok =
    Number.isInteger(code) &&
    (code === 1000 || (code >= 1001 && code <= 1003) || (code >= 1007 && code <= 1014) || (code >= 3000 && code <= 4999))
  if (!ok) throw new RangeError(`closeWebSockets(code): code must be 1000-1003, 1007-1014 or 3000-4999 (got ${describe(code)})`)
  if (reason !== undefined && (typeof reason !== 'string' || new TextEncoder().encode(reason).length > 123)) {
    // A close frame's payload is at most 125 bytes: 2 for the code, 123 for the reason (RFC 6455 §5.5).
    throw new RangeError(`closeWebSockets(code, reason): reason must be a string of at most 123 bytes (got ${describe(reason)})`)
  }
}
