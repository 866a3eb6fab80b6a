import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import WebSocket from 'ws'
import { afterEach, describe, expect, it } from 'vitest'
import type { HotPeer, RuntimeApiRoute } from '../../src/index.ts'
import { createWebSocketLayer, type WebSocketLayer } from '../../src/node/websocket.ts'
import { createSvcHandler } from '../../src/runtime/handler.ts'
import { recordingLogger, sleep, stalledClient, until } from '../http/_helpers.ts'

const INTERVAL_MS = 50

let server: Server | undefined
let layer: WebSocketLayer | undefined

afterEach(async () => {
  layer?.terminateAll()
  await layer?.dispose()
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()))
  server = layer = undefined
})

/** The WebSocket layer on a plain node:http server, with a sweep short enough for a test. */
async function listen(route: RuntimeApiRoute): Promise<number> {
  const handler = createSvcHandler({ routes: [route], pages: [], logger: recordingLogger() })
  server = createServer((_req, res) => res.end())
  layer = createWebSocketLayer({
    handler: () => handler,
    logger: recordingLogger(),
    draining: () => false,
    maxMessageBytes: 1024 * 1024,
    maxBufferedBytes: 8 * 1024 * 1024,
    livenessIntervalMs: INTERVAL_MS,
  })
  layer.attach(server)
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve))
  return (server.address() as AddressInfo).port
}

/** A hot route that records how its connections close. */
function quietRoute(): { route: RuntimeApiRoute; closes: number[] } {
  const closes: number[] = []
  const route: RuntimeApiRoute = {
    path: '/api/quiet',
    module: {
      websocket(peer: HotPeer) {
        peer.on('message', (data) => peer.send(data))
        peer.on('close', (code) => closes.push(code))
      },
    },
  }
  return { route, closes }
}

/** A masked client text frame (RFC 6455 §5.2, §5.3) of at most 125 bytes. */
function textFrame(text: string): Buffer {
  const payload = Buffer.from(text)
  const mask = Buffer.from([1, 2, 3, 4])
  const masked = payload.map((byte, i) => byte ^ mask[i % 4])
  return Buffer.concat([Buffer.from([0x81, 0x80 | payload.length]), mask, masked])
}

describe('liveness of hot-route WebSockets', () => {
  it('drops a connection that answers no ping, and the route sees 1006', async () => {
    const { route, closes } = quietRoute()
    const port = await listen(route)
    // Reads nothing after the handshake, so never answers a ping.
    const client = await stalledClient(port, '/api/quiet')
    await until(() => closes.length === 1)
    // RFC 6455 §7.4.1: 1006, closed without a close frame.
    expect(closes).toEqual([1006])
    expect(layer!.size).toBe(0)
    // Reading again, the client finds the connection gone.
    client.socket.resume()
    await client.closed
  })

  it('keeps a quiet connection whose client answers pings', async () => {
    const { route, closes } = quietRoute()
    const port = await listen(route)
    const ws = new WebSocket(`ws://127.0.0.1:${port}/api/quiet`)
    let pings = 0
    ws.on('ping', () => pings++)
    await new Promise((resolve) => ws.once('open', resolve))
    await until(() => pings >= 4)
    expect(closes).toEqual([])
    const echoed = new Promise((resolve) => ws.once('message', (data) => resolve(data.toString())))
    ws.send('still here')
    expect(await echoed).toBe('still here')
    ws.close()
  })

  it('keeps a connection that sends messages, even one that answers no ping', async () => {
    const { route, closes } = quietRoute()
    const port = await listen(route)
    const client = await stalledClient(port, '/api/quiet')
    let closed = false
    void client.closed.then(() => (closed = true))
    const deadline = Date.now() + 8 * INTERVAL_MS
    while (Date.now() < deadline) {
      client.socket.write(textFrame('tick'))
      await sleep(INTERVAL_MS / 5)
    }
    expect(closed).toBe(false)
    expect(closes).toEqual([])
    expect(layer!.size).toBe(1)
  })
})
