/**
 * The contenders of `bench/http.ts` that run on Bun or Deno, one per child
 * process:
 *
 *   bun bench/_runtime-servers.ts <kind>
 *   deno run --allow-all --node-modules-dir=manual bench/_runtime-servers.ts <kind>
 *
 * kinds: hono (Hono on the runtime's own server, `Bun.serve` or
 * `Deno.serve`), svc (svcjs/bun's `startBunServer` or svcjs/deno's
 * `startDenoServer`). Each serves `GET /api/hello` → `{"hello":"world"}`,
 * listens on an ephemeral port on 127.0.0.1 and prints the port on stdout.
 */
declare const Bun: {
  serve(options: { port: number; hostname: string; fetch: (request: Request) => Response | Promise<Response> }): { port: number }
}
declare const Deno: {
  serve(
    options: { port: number; hostname: string; onListen: (addr: { port: number }) => void },
    fetch: (request: Request) => Response | Promise<Response>,
  ): unknown
}

const kind = process.argv[2]
const runtime = 'Bun' in globalThis ? 'bun' : 'Deno' in globalThis ? 'deno' : undefined
const BODY = { hello: 'world' }

async function main(): Promise<number> {
  if (!runtime) throw new Error('bench/_runtime-servers.ts runs on Bun or Deno; bench/_http-servers.ts holds the Node contenders')
  switch (kind) {
    case 'hono': {
      const { Hono } = await import('hono')
      const app = new Hono()
      app.get('/api/hello', (c) => c.json(BODY))
      if (runtime === 'bun') return Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: app.fetch }).port
      return new Promise((resolve) => Deno.serve({ port: 0, hostname: '127.0.0.1', onListen: ({ port }) => resolve(port) }, app.fetch))
    }
    case 'svc': {
      const entry = await import(`../targets/${runtime}/runtime.ts`)
      const start = runtime === 'bun' ? entry.startBunServer : entry.startDenoServer
      const server = await start({
        port: 0,
        host: '127.0.0.1',
        pages: [],
        installSignalHandlers: false,
        apiRoutes: [{ path: '/api/hello', module: { GET: () => BODY } }],
      })
      return server.port
    }
    default:
      throw new Error(`Unknown contender "${kind}"; use hono or svc`)
  }
}

const port = await main()
process.stdout.write(`${port}\n`)
