/**
 * WebSocket upgrades for hot routes on Node (docs/routes.md "Hot routes"):
 * the shared bookkeeping (./hot-sockets.ts) on crossws's Node adapter, with
 * what only Node does: an upgrade arrives as a raw socket, so a refusal is
 * written on it before any handshake; `ws` enforces the message limit; and
 * the liveness sweep (./liveness.ts) is svc's own.
 */
import type { IncomingMessage, Server } from 'node:http'
import type { Socket } from 'node:net'
import type { Duplex } from 'node:stream'
import type { Message } from 'crossws'
import nodeAdapter, { type NodeAdapter } from 'crossws/adapters/node'
import { NodeRequest } from 'srvx/node'
import type { Logger } from '../types.ts'
import type { PeerTransport } from './hot-peer.ts'
import { HotSockets, type HotSocketsOptions } from './hot-sockets.ts'
import { createLivenessSweep, LIVENESS_INTERVAL_MS, type LivenessSweep } from './liveness.ts'
import { writeResponse } from './socket-response.ts'

export { DEFAULT_CLOSE_CODE } from './hot-sockets.ts'

/** What `ws` says of a message over `maxPayload`. */
const MESSAGE_TOO_BIG = 'Max payload size exceeded'

/**
 * Sends a string as its UTF-8 bytes in a text frame. `ws` writes a frame as
 * its header and its payload in one corked write; Node's socket writes a
 * list of Buffers as they are, but for a list holding a string it allocates
 * a backing store and encodes into it on every write, which costs more than
 * encoding the string into a Buffer from Node's pool first. crossws passes
 * its options on to `ws`'s `send`, where `binary: false` keeps the text opcode.
 */
const TEXT_FRAME = { binary: false } as { compress?: boolean }

const transport: PeerTransport = {
  send(peer, data) {
    // crossws's Node peer answers with the bytes still queued, ws's bufferedAmount.
    const queued = typeof data === 'string' ? peer.send(Buffer.from(data), TEXT_FRAME) : peer.send(data)
    return typeof queued === 'number' ? queued : peer.bufferedAmount
  },
  // `ws` can cut the socket at once, which frees what is queued on it.
  drop: (peer) => peer.terminate(),
}

export interface WebSocketLayerOptions extends HotSocketsOptions {
  /** How often each connection is pinged; one silent for a whole interval after a ping is dropped. @default 30000 */
  livenessIntervalMs?: number
}

export class WebSocketLayer extends HotSockets<Socket> {
  readonly #logger: Logger
  readonly #liveness: LivenessSweep
  readonly #ws: NodeAdapter

  constructor(options: WebSocketLayerOptions) {
    const liveness = createLivenessSweep(options.livenessIntervalMs ?? LIVENESS_INTERVAL_MS)
    super(options, {
      transport,
      watch(peer, socket) {
        const watched = { bytesRead: () => socket.bytesRead, ping: () => peer.ping(), terminate: () => peer.terminate() }
        liveness.watch(watched)
        return () => liveness.unwatch(watched)
      },
    })
    this.#logger = options.logger
    this.#liveness = liveness
    const hooks = this.sharedHooks
    this.#ws = nodeAdapter({
      // `ws` refuses a message past maxPayload as its frames arrive, before
      // buffering it, and closes with 1009 (RFC 6455 §7.4.1).
      serverOptions: { maxPayload: options.maxMessageBytes },
      // The liveness sweep is svc's own (./liveness.ts), free of a per-message listener.
      idleTimeout: 0,
      hooks: {
        ...hooks,
        // Text frames arrive as a string, binary ones as a Buffer (a Uint8Array).
        message: (peer, message: Message) => this.deliver(peer, message.rawData as string | Uint8Array),
        error: (peer, error) => {
          // `ws` has already closed the connection with 1009.
          if (String(error.message).includes(MESSAGE_TOO_BIG)) return this.tooBig(peer)
          hooks.error(peer, error)
        },
      },
    })
  }

  /** Takes the `upgrade` requests of `server`. */
  attach(server: Server): void {
    server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
      this.handleUpgrade(req, socket, head).catch((error) => {
        this.#logger.error(`[svc] upgrade of ${pathOf(req)} failed:`, error)
        socket.destroy()
      })
    })
  }

  /**
   * The `upgrade` listener of the HTTP server. The socket is the client's
   * raw connection, so an upgrade no hot route accepts is answered on it,
   * before any handshake.
   */
  async handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    socket.on('error', (error) => this.#logger.warn(`[svc] upgrade socket error on ${pathOf(req)}:`, error))
    const request = new NodeRequest({ req }) as unknown as Request
    // An HTTP server's upgrade socket is a net.Socket (a tls.TLSSocket over HTTPS).
    const refused = await this.answer(request, { remoteAddress: req.socket.remoteAddress }, socket as Socket)
    if (refused) return writeResponse(socket, refused)
    await this.#ws.handleUpgrade(req, socket, head, request)
  }

  /** Stops the liveness sweep and closes what is left. */
  dispose(): Promise<void> {
    this.#liveness.stop()
    return this.#ws.close()
  }
}

export function createWebSocketLayer(options: WebSocketLayerOptions): WebSocketLayer {
  return new WebSocketLayer(options)
}

/** The path of an upgrade request, as a log line names it: without its query, which may carry a token. */
function pathOf(req: IncomingMessage): string {
  const url = req.url ?? ''
  const query = url.indexOf('?')
  return query === -1 ? url : url.slice(0, query)
}
