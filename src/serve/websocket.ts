/**
 * WebSocket upgrades for hot routes on Bun and Deno (docs/routes.md "Hot
 * routes"): the shared bookkeeping (src/node/hot-sockets.ts) on crossws's
 * adapter for the runtime, which the `WebHost` brings. What differs from
 * Node: an upgrade is an ordinary request whose response the runtime
 * sends; a frame's bytes come as the runtime hands them; and where the
 * runtime does not limit a message's size itself, the layer does.
 */
import type { Hooks, Message } from 'crossws'
import { HotSockets, type HotSocketsOptions, TOO_BIG } from '../node/hot-sockets.ts'
import type { RequestInfo } from '../types.ts'
import type { Listener, WebHost } from './host.ts'

export interface WebSocketLayerOptions extends HotSocketsOptions {
  host: WebHost
}

export class WebSocketLayer extends HotSockets {
  /** The crossws hooks the runtime's adapter calls. */
  readonly hooks: Partial<Hooks>

  constructor(options: WebSocketLayerOptions) {
    const { host, maxMessageBytes } = options
    super(options, {
      transport: {
        // Neither runtime's send answers what is queued: Bun's tells what became of the frame, Deno's nothing.
        send(peer, data) {
          peer.send(data)
          return peer.bufferedAmount
        },
        drop: host.drop,
      },
    })
    const hooks = this.sharedHooks
    this.hooks = {
      ...hooks,
      message: (peer, message: Message) => {
        const data = message.rawData as string | Uint8Array | ArrayBuffer
        if (!host.limitsMessages && isOver(data, maxMessageBytes)) {
          peer.close(TOO_BIG, 'Message too big')
          return
        }
        // Text frames arrive as a string; binary ones as a Uint8Array on Bun and an ArrayBuffer on Deno.
        this.deliver(peer, data instanceof ArrayBuffer ? new Uint8Array(data) : data)
      },
      close: (peer, details) => {
        // The runtime, or the message hook above, closed the connection with 1009.
        if (details.code === TOO_BIG) this.tooBig(peer)
        hooks.close(peer, details)
      },
    }
  }

  /** Answers an upgrade request through the core handler, and completes the handshake once a hot route accepts it. */
  async upgrade(request: Request, info: RequestInfo, listener: Listener): Promise<Response | undefined> {
    return (await this.answer(request, info, undefined)) ?? listener.upgrade(request, info)
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
