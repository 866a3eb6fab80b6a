/**
 * HTTP and WebSocket throughput of startSvcServer against baselines
 * (issue 4 §4). Not a test: a measurement.
 *
 *   npm run bench:http -- [--rounds 5] [--duration 5] [--connections 50]
 *
 * - HTTP: requests/s of `GET /api/hello` (a JSON serverless route) through
 *   startSvcServer, raw node:http and Hono on @hono/node-server, with one
 *   load generator (autocannon). Goal: svc ≥ 0.80 × raw.
 * - WebSocket: echo messages/s of a hot route against a plain `ws` server,
 *   with the same ping-pong clients. Goal: svc ≥ 0.8 × ws.
 *
 * Each server runs in its own process pinned to one core and the load
 * generator on another (taskset), the contenders alternate within every
 * round, and the medians of per-round ratios are reported: one run on a
 * shared machine means little.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process'
import { availableParallelism } from 'node:os'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import autocannon from 'autocannon'
import WebSocket from 'ws'

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '5' },
    duration: { type: 'string', default: '5' },
    warmup: { type: 'string', default: '1' },
    connections: { type: 'string', default: '50' },
    'ws-clients': { type: 'string', default: '50' },
  },
})
const rounds = Number(values.rounds)
const duration = Number(values.duration)
const warmup = Number(values.warmup)
const connections = Number(values.connections)
const wsClients = Number(values['ws-clients'])

const SERVER_ENTRY = fileURLToPath(new URL('./_http-servers.ts', import.meta.url))
const cores = availableParallelism()
const hasTaskset = (() => {
  try {
    execFileSync('taskset', ['-V'], { stdio: 'ignore' })
    return true
  } catch {
    return false
  }
})()
const pinned = hasTaskset && cores >= 2
const SERVER_CORE = '0'
const LOADGEN_CORE = String(cores - 1)

if (pinned) {
  // Every thread of this process (autocannon, ws clients) on the load-generator core.
  execFileSync('taskset', ['-a', '-p', '-c', LOADGEN_CORE, String(process.pid)], { stdio: 'ignore' })
}

async function startServer(kind: string): Promise<{ port: number; child: ChildProcess }> {
  const args = [process.execPath, SERVER_ENTRY, kind]
  const child = pinned
    ? spawn('taskset', ['-c', SERVER_CORE, ...args], { stdio: ['ignore', 'pipe', 'inherit'] })
    : spawn(args[0], args.slice(1), { stdio: ['ignore', 'pipe', 'inherit'] })
  const port = await new Promise<number>((resolve, reject) => {
    let out = ''
    child.stdout!.on('data', (chunk) => {
      out += chunk
      const line = out.split('\n')[0]
      if (out.includes('\n')) resolve(Number(line))
    })
    child.once('exit', (code) => reject(new Error(`contender ${kind} exited with ${code} before listening`)))
  })
  return { port, child }
}

async function stopServer(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return
  const exited = new Promise((resolve) => child.once('exit', resolve))
  child.kill('SIGKILL')
  await exited
}

function cannon(port: number, seconds: number): Promise<autocannon.Result> {
  return autocannon({ url: `http://127.0.0.1:${port}/api/hello`, connections, duration: seconds, pipelining: 1 })
}

async function httpRate(kind: string): Promise<number> {
  const { port, child } = await startServer(kind)
  try {
    if (warmup > 0) await cannon(port, warmup)
    const result = await cannon(port, duration)
    if (result.non2xx > 0 || result.errors > 0) throw new Error(`${kind}: ${result.non2xx} non-2xx answers, ${result.errors} errors`)
    return result.requests.average
  } finally {
    await stopServer(child)
  }
}

/** Ping-pong: every client sends one frame, waits for the echo, sends the next. */
async function echoRate(kind: string): Promise<number> {
  const { port, child } = await startServer(kind)
  const path = kind === 'ws' ? '/' : '/api/echo'
  const sockets = await Promise.all(
    Array.from({ length: wsClients }, () => {
      const socket = new WebSocket(`ws://127.0.0.1:${port}${path}`)
      return new Promise<WebSocket>((resolve, reject) => {
        socket.once('open', () => resolve(socket))
        socket.once('error', reject)
      })
    }),
  )
  try {
    const run = (seconds: number) =>
      new Promise<number>((resolve) => {
        let count = 0
        let running = true
        const payload = 'x'.repeat(32)
        for (const socket of sockets) {
          socket.removeAllListeners('message')
          socket.on('message', () => {
            count++
            if (running) socket.send(payload)
          })
          socket.send(payload)
        }
        setTimeout(() => {
          running = false
          // Let the frames still in flight come back before the next phase.
          setTimeout(() => resolve(count / seconds), 200)
        }, seconds * 1000)
      })
    if (warmup > 0) await run(warmup)
    return await run(duration)
  } finally {
    for (const socket of sockets) socket.terminate()
    await stopServer(child)
  }
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = sorted.length >> 1
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2
}

const fmt = (n: number) => Math.round(n).toLocaleString('en-US')

async function main(): Promise<void> {
  console.log(
    `bench:http — ${rounds} rounds × ${duration}s (+${warmup}s warm-up), ${connections} HTTP connections, ${wsClients} WebSocket clients; ` +
      (pinned
        ? `servers on core ${SERVER_CORE}, load generator on core ${LOADGEN_CORE} (taskset)`
        : 'NOT pinned (taskset missing or one core): figures are indicative only') +
      `; node ${process.version}`,
  )
  const http = { raw: [] as number[], hono: [] as number[], svc: [] as number[] }
  const ws = { ws: [] as number[], svc: [] as number[] }
  const ratios = { svcRaw: [] as number[], honoRaw: [] as number[], svcHono: [] as number[], svcWs: [] as number[] }
  const orders = [
    ['raw', 'hono', 'svc'],
    ['svc', 'raw', 'hono'],
    ['hono', 'svc', 'raw'],
  ] as const
  for (let round = 0; round < rounds; round++) {
    const rates: Record<string, number> = {}
    for (const kind of orders[round % orders.length]) rates[kind] = await httpRate(kind)
    http.raw.push(rates.raw)
    http.hono.push(rates.hono)
    http.svc.push(rates.svc)
    ratios.svcRaw.push(rates.svc / rates.raw)
    ratios.honoRaw.push(rates.hono / rates.raw)
    ratios.svcHono.push(rates.svc / rates.hono)
    const wsOrder = round % 2 === 0 ? (['ws', 'svc-ws'] as const) : (['svc-ws', 'ws'] as const)
    const echo: Record<string, number> = {}
    for (const kind of wsOrder) echo[kind] = await echoRate(kind)
    ws.ws.push(echo.ws)
    ws.svc.push(echo['svc-ws'])
    ratios.svcWs.push(echo['svc-ws'] / echo.ws)
    console.log(
      `round ${round + 1}: req/s raw ${fmt(rates.raw)}, hono ${fmt(rates.hono)}, svc ${fmt(rates.svc)} (svc/raw ${(rates.svc / rates.raw).toFixed(2)}); ` +
        `echo msg/s ws ${fmt(echo.ws)}, svc ${fmt(echo['svc-ws'])} (svc/ws ${(echo['svc-ws'] / echo.ws).toFixed(2)})`,
    )
  }
  const svcRaw = median(ratios.svcRaw)
  const svcWs = median(ratios.svcWs)
  console.log('\nmedians')
  console.log(
    `  HTTP req/s     raw node:http ${fmt(median(http.raw))}   hono/node-server ${fmt(median(http.hono))}   svc ${fmt(median(http.svc))}`,
  )
  console.log(`  svc / raw      ${svcRaw.toFixed(2)}   (goal ≥ 0.80) ${svcRaw >= 0.8 ? 'met' : 'NOT met'}`)
  console.log(`  hono / raw     ${median(ratios.honoRaw).toFixed(2)}`)
  console.log(`  svc / hono     ${median(ratios.svcHono).toFixed(2)}`)
  console.log(`  WS echo msg/s  ws ${fmt(median(ws.ws))}   svc ${fmt(median(ws.svc))}`)
  console.log(`  svc / ws       ${svcWs.toFixed(2)}   (goal ≥ 0.80) ${svcWs >= 0.8 ? 'met' : 'NOT met'}`)
}

await main()
