/**
 * The contenders of `bench/http.ts`, one per child process:
 *
 *   node bench/_http-servers.ts <kind>
 *
 * kinds: raw (node:http), hono (Hono on @hono/node-server), svc
 * (startSvcServer; svc-untraced with telemetry off, svc-sdk with the
 * OpenTelemetry SDK registered and dropping what it is handed), ws (a plain `ws` echo server), svc-ws (a hot route that
 * echoes). Each serves `GET /api/hello` → `{"hello":"world"}` (or echoes
 * WebSocket frames on `/api/echo`), listens on an ephemeral port on
 * 127.0.0.1 and prints the port on stdout.
 */
import http from 'node:http'
import type { AddressInfo } from 'node:net'

const kind = process.argv[2]
const BODY = { hello: 'world' }

async function main(): Promise<number> {
  switch (kind) {
    case 'raw': {
      const server = http.createServer((req, res) => {
        if (req.url === '/api/hello') {
          const body = JSON.stringify(BODY)
          res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) })
          res.end(body)
        } else {
          res.writeHead(404)
          res.end()
        }
      })
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
      return (server.address() as AddressInfo).port
    }
    case 'hono': {
      const { Hono } = await import('hono')
      const { serve } = await import('@hono/node-server')
      const app = new Hono()
      app.get('/api/hello', (c) => c.json(BODY))
      return new Promise((resolve) => serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, (info) => resolve(info.port)))
    }
    case 'svc':
    case 'svc-untraced':
    case 'svc-sdk':
    case 'svc-ws': {
      const { startSvcServer } = await import('../src/node.ts')
      if (kind === 'svc-sdk') (await import('./_telemetry.ts')).registerDroppingSdk()
      const server = await startSvcServer({
        ...(kind === 'svc-untraced' ? { telemetry: false } : {}),
        port: 0,
        host: '127.0.0.1',
        pages: [],
        installSignalHandlers: false,
        apiRoutes: [
          { path: '/api/hello', module: { GET: () => BODY } },
          {
            path: '/api/echo',
            module: {
              websocket: (peer: { send(d: unknown): void; on(e: 'message', fn: (d: unknown) => void): void }) => {
                peer.on('message', (data) => peer.send(data))
              },
            },
          },
        ],
      })
      return server.port
    }
    case 'ws': {
      const { WebSocketServer } = await import('ws')
      const wss = new WebSocketServer({ port: 0, host: '127.0.0.1' })
      wss.on('connection', (socket) => {
        socket.on('message', (data, isBinary) => socket.send(data, { binary: isBinary }))
      })
      await new Promise<void>((resolve) => wss.once('listening', () => resolve()))
      return (wss.address() as AddressInfo).port
    }
    default:
      throw new Error(`Unknown contender "${kind}"; use raw, hono, svc, ws or svc-ws`)
  }
}

const port = await main()
process.stdout.write(`${port}\n`)
// SIGTERM ends the process through exit(), so that `node --cpu-prof bench/_http-servers.ts svc` writes its profile.
process.on('SIGTERM', () => process.exit(0))
