/**
 * The `peer` a hot route's `websocket()` gets (docs/routes.md "Hot routes"):
 * a thin layer over a crossws peer, the same on Node, Bun and Deno. The two
 * things that differ by runtime, how a frame is sent and how a connection
 * is dropped, come from a `PeerTransport`.
 */
import type { Peer } from 'crossws'
import type { HotPeer } from '../runtime/app/types.ts'
import type { Logger } from '../types.ts'

// biome-ignore lint/suspicious/noExplicitAny: a route's listener takes the arguments of its event (a message, or a code and reason)
type Listener = (...args: any[]) => unknown

/** Close reason of a peer dropped for a full send buffer; the route's close listeners get it with 1008. */
const BUFFER_FULL_REASON = 'Send buffer full'

/** What sending and dropping are on one runtime. */
export interface PeerTransport {
  /** Sends `data` on `peer`; answers the bytes it has queued for sending, this frame's included. */
  send(peer: Peer, data: unknown): number
  /**
   * Drops the connection without waiting for the client, where the runtime
   * can; where it cannot, starts the closing handshake with `code` and `reason`.
   */
  drop(peer: Peer, code: number, reason: string): void
}

export interface HotRoutePeerOptions {
  transport: PeerTransport
  logger: Logger
  /** Most bytes the peer may have queued for sending before it is dropped. */
  maxBufferedBytes: number
}

export class HotRoutePeer implements HotPeer {
  readonly #peer: Peer
  /** The route's URL pattern. */
  readonly route: string
  readonly #options: HotRoutePeerOptions
  #message: Listener[] = []
  #close: Listener[] = []
  /** Frames that arrive while an async `websocket()` has not returned yet. */
  #queue: (string | Uint8Array)[] | undefined
  #closed = false
  /** Dropped for a full send buffer. */
  #overflowed = false

  constructor(peer: Peer, route: string, options: HotRoutePeerOptions) {
    this.#peer = peer
    this.route = route
    this.#options = options
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
    if (this.#options.transport.send(this.#peer, data) > this.#options.maxBufferedBytes) this.#overflow()
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
    const { logger, maxBufferedBytes } = this.#options
    logger.warn(
      `[svc] hot route ${this.route}: peer ${this.id} is not reading; ${this.#peer.bufferedAmount} bytes are queued, past websocket.maxBufferedBytes (${maxBufferedBytes}); dropping the connection. Watch peer.bufferedAmount to send no faster than the client reads.`,
    )
    this.drop(1008, BUFFER_FULL_REASON)
  }

  /** Ends the connection without waiting for the client, where the runtime can. */
  drop(code: number, reason: string): void {
    this.#options.transport.drop(this.#peer, code, reason)
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

  /** The connection is gone: the close listeners learn how, once. */
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
    this.#options.logger.error(`[svc] hot route ${this.route}: a "${event}" listener failed:`, error)
  }
}
