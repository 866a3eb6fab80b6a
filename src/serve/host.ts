/**
 * What a Bun server and a Deno server do differently, behind one small
 * interface: the listener (the runtime's own `Bun.serve` or `Deno.serve`)
 * and the WebSocket handshake (crossws's adapter for it). `startWebServer`
 * (./server.ts) does everything else the same way on both.
 */
import type { Hooks, Peer } from 'crossws'
import type { RequestInfo } from '../types.ts'

export interface ListenOptions {
  port: number
  hostname: string
  /** Every request's `waitUntil`. */
  waitUntil: RequestInfo['waitUntil']
  /**
   * Answers every request, with the info the host made for it (the peer
   * address, read only when asked); `undefined` once the runtime has taken
   * the request's socket for a WebSocket (Bun).
   */
  fetch(request: Request, info: RequestInfo): Response | undefined | Promise<Response | undefined>
  /** The hot routes' WebSocket hooks. */
  hooks: Partial<Hooks>
  /** Largest inbound message, in bytes, for a runtime that enforces it itself (`limitsMessages`). */
  maxMessageBytes: number
  /** Seconds between liveness pings; a connection that answers none is closed by the runtime. */
  idleTimeoutSeconds: number
}

export interface Listener {
  /** The address bound, as the runtime reports it (a HOST such as `localhost` resolved). */
  readonly address: string
  readonly port: number
  /** Completes the handshake of an upgrade request: the response to send, or `undefined` when the runtime sends it itself. */
  upgrade(request: Request, info: RequestInfo): Promise<Response | undefined>
  /** Stops taking connections; resolves once the responses in flight are written. */
  stop(): Promise<void>
  /** Cuts the connections that are still open. */
  abort(): Promise<void>
}

export interface WebHost {
  /** The runtime's name, for messages. */
  readonly name: string
  /** The build target for this runtime, for messages: `svc build --target <target>`. */
  readonly target: string
  /** Whether this process runs on the runtime. */
  readonly present: boolean
  /**
   * Whether the runtime refuses an inbound WebSocket message over
   * `maxMessageBytes` itself, before buffering it all. Note: where it does
   * not, the server closes the connection with 1009 once such a message has
   * arrived.
   */
  readonly limitsMessages: boolean
  listen(options: ListenOptions): Promise<Listener>
  /**
   * Drops a connection without waiting for the client, where the runtime can;
   * where it cannot, starts the closing handshake with `code` and `reason`.
   */
  drop(peer: Peer, code: number, reason: string): void
}
