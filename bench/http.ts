/**
 * HTTP and WebSocket throughput of startSvcServer against baselines. Not a
 * test: a measurement.
 *
 *   npm run bench:http -- [--only http|ws|tracing] [--rounds 5] [--duration 5] [--connections 50]
 *                          [--ws-client native|node] [--ws-processes N] [--ws-connections 50]
 *
 * `--only` runs one part. `--ws-client node` takes the Node clients even
 * when the native one is available; `--ws-processes` defaults to 1 for the
 * native client and 2 for the Node one.
 *
 * - HTTP: requests/s of `GET /api/hello` (a JSON serverless route) through
 *   startSvcServer, raw node:http and Hono on @hono/node-server. The load
 *   generator is `wrk` (native, one thread); without it, autocannon, which
 *   runs in JavaScript and may saturate before a server does. Goal: svc ≥
 *   0.95 × raw.
 * - HTTP on Bun and Deno: the same route through the server `svc build
 *   --target bun|deno` runs (bench/_runtime-servers.ts) against Hono on
 *   the same runtime's own server (`Bun.serve`, `Deno.serve`), as svc /
 *   hono per runtime. The runtimes are the npm packages among svc's
 *   devDependencies; a runtime whose package is missing is left out.
 * - WebSocket: echo messages/s of a hot route against a plain `ws` server.
 *   The load generator is bench/ws-load.c (C, epoll, one thread), compiled
 *   with `cc` on first use (bench/_ws-load.ts); without a C compiler, two
 *   Node client processes (bench/_http-ws-client.ts), which may saturate
 *   before a server does. Both play ping-pong with one precomputed frame.
 *   Goal: svc ≥ 0.90 × ws.
 * - Tracing: the same route through startSvcServer with the OpenTelemetry
 *   API installed and no SDK registered (what `svc` is above, since svc's
 *   devDependencies install the API), and with the SDK registered and
 *   exporters that drop everything, each as a ratio to a server with
 *   telemetry off. Goal for the first: at least 1 / 1.03 of its requests/s.
 *
 * Each server runs in its own process pinned to one core and the load
 * generator on another (taskset). Every line shows the CPU the generator and
 * the server used, as a share of one core: a generator near 100% is the
 * bottleneck and the round measures it, not the server. A server that gets
 * less than a whole core (other work on the machine) shows it too; its
 * requests per CPU-second of its own then compare the servers' cost per
 * request, whatever share of the core each one got. The contenders
 * alternate within every round, and the medians of per-round ratios are
 * reported: one run on a shared machine means little.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process'
import { createRequire } from 'node:module'
import { availableParallelism } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { parseProcCpu, procCpu } from './_proc-cpu.ts'
import { nativeWsClient } from './_ws-load.ts'

const { values } = parseArgs({
  options: {
    only: { type: 'string' },
    rounds: { type: 'string', default: '5' },
    duration: { type: 'string', default: '5' },
    warmup: { type: 'string', default: '1' },
    connections: { type: 'string', default: '50' },
    'ws-client': { type: 'string' },
    'ws-processes': { type: 'string' },
    'ws-connections': { type: 'string', default: '50' },
  },
})
const rounds = Number(values.rounds)
const duration = Number(values.duration)
const warmup = Number(values.warmup)
const connections = Number(values.connections)
const wsConnections = Number(values['ws-connections'])
if (values.only !== undefined && values.only !== 'http' && values.only !== 'ws' && values.only !== 'tracing') {
  throw new RangeError(`bench:http --only must be "http", "ws" or "tracing" (got ${JSON.stringify(values.only)})`)
}
const runHttp = values.only === undefined || values.only === 'http'
const runWs = values.only === undefined || values.only === 'ws'
const runTracing = values.only === undefined || values.only === 'tracing'
if (values['ws-client'] !== undefined && values['ws-client'] !== 'native' && values['ws-client'] !== 'node') {
  throw new RangeError(`bench:http --ws-client must be "native" or "node" (got ${JSON.stringify(values['ws-client'])})`)
}

const HTTP_GOAL = 0.95
const WS_GOAL = 0.9
const SERVER_ENTRY = fileURLToPath(new URL('./_http-servers.ts', import.meta.url))
const RUNTIME_SERVER_ENTRY = fileURLToPath(new URL('./_runtime-servers.ts', import.meta.url))
const WS_CLIENT = fileURLToPath(new URL('./_http-ws-client.ts', import.meta.url))

const has = (command: string, args: string[]) => {
  try {
    execFileSync(command, args, { stdio: 'ignore' })
    return true
  } catch {
    return false
  }
}
const cores = availableParallelism()
const pinned = cores >= 2 && has('taskset', ['-V'])
const hasWrk = has('sh', ['-c', 'command -v wrk'])
const SERVER_CORE = '0'
const LOADGEN_CORE = String(cores - 1)
const onLoadCore = (command: string[]) => (pinned ? ['taskset', '-c', LOADGEN_CORE, ...command] : command)

/** The WebSocket client command (without its arguments) and how many processes run it. */
function chooseWsClient(): { command: string[]; processes: number; label: string; note?: string } {
  const node = { command: [process.execPath, WS_CLIENT], label: 'Node client' }
  const native = values['ws-client'] === 'node' ? undefined : nativeWsClient()
  if (values['ws-client'] === 'native' && native && 'unavailable' in native) {
    throw new Error(`bench:http --ws-client native: ${native.unavailable}`)
  }
  const chosen =
    native && 'binary' in native
      ? { command: [native.binary], label: 'ws-load (native, epoll, 1 thread)', defaultProcesses: 1 }
      : { ...node, defaultProcesses: 2 }
  const processes = Number(values['ws-processes'] ?? chosen.defaultProcesses)
  const note =
    native && 'unavailable' in native
      ? `Native WebSocket client unavailable: ${native.unavailable}\nWebSocket load comes from Node client processes, which may saturate before the servers do.\n`
      : undefined
  return { command: chosen.command, processes, label: `${chosen.label} × ${processes}`, note }
}
const wsClient = runWs ? chooseWsClient() : undefined

/** A runtime other than Node, and the command that runs a contender file on it. */
interface OtherRuntime {
  name: 'bun' | 'deno'
  command: (file: string) => string[]
}

/** Bun and Deno from their npm packages (devDependencies of svc), those that are installed. */
function otherRuntimes(): OtherRuntime[] {
  const require = createRequire(import.meta.url)
  const arch = process.arch === 'x64' ? 'x64' : 'aarch64'
  const binary = (pkg: string, file: string) => {
    try {
      return join(dirname(require.resolve(`${pkg}/package.json`)), file)
    } catch {
      return undefined
    }
  }
  const bun = binary(`@oven/bun-${process.platform}-${arch.replace('aarch64', 'arm64')}`, 'bin/bun')
  const deno = binary(`@deno/${process.platform}-${arch}${process.platform === 'linux' ? '-glibc' : ''}`, 'deno')
  return [
    ...(bun ? [{ name: 'bun' as const, command: (file: string) => [bun, file] }] : []),
    // svc's dependencies are in this repository's node_modules.
    ...(deno
      ? [{ name: 'deno' as const, command: (file: string) => [deno, 'run', '--allow-all', '--node-modules-dir=manual', file] }]
      : []),
  ]
}
const runtimes = runHttp ? otherRuntimes() : []

if (pinned) {
  // Every thread of this process (autocannon, when it runs) on the load-generator core.
  execFileSync('taskset', ['-a', '-p', '-c', LOADGEN_CORE, String(process.pid)], { stdio: 'ignore' })
}

/** user + system CPU seconds of a process so far. */
function cpuSeconds(pid: number): number {
  const cpu = procCpu(pid)
  if (!cpu) throw new Error('bench:http reads CPU times from /proc, which this system lacks')
  return cpu.self
}

interface Measured {
  rate: number
  /** CPU of the load generator and of the server over the measured window, in cores (1 = one core busy). */
  loadCpu: number
  serverCpu: number
}

async function startServer(kind: string, runtime?: OtherRuntime): Promise<{ port: number; child: ChildProcess }> {
  const args = runtime ? [...runtime.command(RUNTIME_SERVER_ENTRY), kind] : [process.execPath, SERVER_ENTRY, kind]
  const command = pinned ? ['taskset', '-c', SERVER_CORE, ...args] : args
  const child = spawn(command[0], command.slice(1), { stdio: ['ignore', 'pipe', 'inherit'] })
  const port = await new Promise<number>((resolve, reject) => {
    let out = ''
    child.stdout!.on('data', (chunk) => {
      out += chunk
      if (out.includes('\n')) resolve(Number(out.split('\n')[0]))
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

/** Runs a command to its end and resolves with its stdout; rejects on a non-zero exit. */
function run(command: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(command[0], command.slice(1), { stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (chunk) => (stdout += chunk))
    child.stderr.on('data', (chunk) => (stderr += chunk))
    child.once('error', reject)
    child.once('close', (code) =>
      code === 0 ? resolve(stdout) : reject(new Error(`${command.join(' ')} exited with ${code}:\n${stderr}`)),
    )
  })
}

/** One wrk run; its CPU is read by the shell that waited for it (cutime and cstime of that shell). */
async function wrk(url: string, seconds: number): Promise<{ rate: number; cpu: number }> {
  const script = `${onLoadCore(['wrk']).join(' ')} "$@" || exit $?; echo; echo "@@stat $(cat /proc/$$/stat)"`
  const out = await run(['sh', '-c', script, 'sh', '-t1', `-c${connections}`, `-d${seconds}s`, url])
  const rate = Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1])
  const non2xx = Number(/Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1] ?? 0)
  const socketErrors = /Socket errors: connect (\d+), read (\d+), write (\d+)/.exec(out)
  if (!Number.isFinite(rate) || non2xx > 0 || socketErrors?.slice(1).some((n) => Number(n) > 0)) {
    throw new Error(`wrk: ${url} did not answer every request with 2xx:\n${out}`)
  }
  return { rate, cpu: parseProcCpu(out.slice(out.indexOf('@@stat ') + 7)).children }
}

async function autocannon(url: string, seconds: number): Promise<{ rate: number; cpu: number }> {
  const { default: cannon } = await import('autocannon')
  const before = process.cpuUsage()
  const result = await cannon({ url, connections, duration: seconds, pipelining: 1 })
  const used = process.cpuUsage(before)
  if (result.non2xx > 0 || result.errors > 0) throw new Error(`${url}: ${result.non2xx} non-2xx answers, ${result.errors} errors`)
  return { rate: result.requests.average, cpu: (used.user + used.system) / 1e6 }
}

async function httpRate(kind: string, runtime?: OtherRuntime): Promise<Measured> {
  const { port, child } = await startServer(kind, runtime)
  const load = hasWrk ? wrk : autocannon
  const url = `http://127.0.0.1:${port}/api/hello`
  try {
    if (warmup > 0) await load(url, warmup)
    const before = cpuSeconds(child.pid!)
    const { rate, cpu } = await load(url, duration)
    return { rate, loadCpu: cpu / duration, serverCpu: (cpuSeconds(child.pid!) - before) / duration }
  } finally {
    await stopServer(child)
  }
}

/** Ping-pong echo through the client processes, which share `wsConnections` connections. */
async function echoRate(kind: string): Promise<Measured> {
  const { port, child } = await startServer(kind)
  const path = kind === 'ws' ? '/' : '/api/echo'
  try {
    const before = cpuSeconds(child.pid!)
    const started = performance.now()
    const { command, processes } = wsClient!
    const outputs = await Promise.all(
      Array.from({ length: processes }, (_, i) => {
        const share = Math.floor(wsConnections / processes) + (i < wsConnections % processes ? 1 : 0)
        return run(onLoadCore([...command, String(port), path, String(share), String(warmup), String(duration)]))
      }),
    )
    // The server's CPU over the clients' whole run, warm-up included, per second of that run.
    const serverCpu = (cpuSeconds(child.pid!) - before) / ((performance.now() - started) / 1000)
    const results = outputs.map((out) => JSON.parse(out) as { messages: number; seconds: number; cpuMs: number })
    return {
      rate: results.reduce((sum, r) => sum + r.messages / r.seconds, 0),
      loadCpu: results.reduce((sum, r) => sum + r.cpuMs / 1000 / r.seconds, 0),
      serverCpu,
    }
  } finally {
    await stopServer(child)
  }
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = sorted.length >> 1
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2
}

const fmt = (n: number) => Math.round(n).toLocaleString('en-US')
const pct = (cores: number) => `${Math.round(cores * 100)}%`
const show = (label: string, m: Measured) => `${label} ${fmt(m.rate)} (gen ${pct(m.loadCpu)}, server ${pct(m.serverCpu)})`

async function main(): Promise<void> {
  if (runHttp && !hasWrk) {
    console.log(
      'wrk not found: HTTP load comes from autocannon, which runs in JavaScript and may saturate before the servers do.\n' +
        'Install wrk for figures that measure the servers: `apt-get install wrk` (Debian, Ubuntu) or `brew install wrk` (macOS).\n',
    )
  }
  if (wsClient?.note) console.log(wsClient.note)
  const generators = [
    runHttp ? `HTTP generator ${hasWrk ? 'wrk (1 thread)' : 'autocannon'}, ${connections} connections; ` : '',
    wsClient ? `WebSocket generator ${wsClient.label}, ${wsConnections} connections; ` : '',
  ].join('')
  console.log(
    `bench:http: ${rounds} rounds × ${duration}s (+${warmup}s warm-up); ${generators}` +
      (pinned
        ? `servers on core ${SERVER_CORE}, load generators on core ${LOADGEN_CORE} (taskset)`
        : 'NOT pinned (taskset missing or one core): figures are indicative only') +
      `; node ${process.version}` +
      runtimes.map((runtime) => `; ${runtime.name} ${runtimeVersion(runtime)}`).join(''),
  )
  console.log('CPU is a share of one core over the measured window: a generator near 100% is the bottleneck of its round.\n')
  const http = { raw: [] as number[], hono: [] as number[], svc: [] as number[] }
  const ws = { ws: [] as number[], svc: [] as number[] }
  const ratios = {
    svcRaw: [] as number[],
    honoRaw: [] as number[],
    svcWs: [] as number[],
    svcRawPerCpu: [] as number[],
    svcWsPerCpu: [] as number[],
  }
  const onRuntime = Object.fromEntries(
    runtimes.map((runtime) => [runtime.name, { hono: [] as number[], svc: [] as number[], ratio: [] as number[], perCpu: [] as number[] }]),
  )
  const tracing = { api: [] as number[], sdk: [] as number[] }
  const perCpu = (m: Measured) => m.rate / m.serverCpu
  const orders = [
    ['raw', 'hono', 'svc'],
    ['svc', 'raw', 'hono'],
    ['hono', 'svc', 'raw'],
  ] as const
  for (let round = 0; round < rounds; round++) {
    if (runHttp) {
      const rates: Record<string, Measured> = {}
      for (const kind of orders[round % orders.length]) rates[kind] = await httpRate(kind)
      http.raw.push(rates.raw.rate)
      http.hono.push(rates.hono.rate)
      http.svc.push(rates.svc.rate)
      ratios.svcRaw.push(rates.svc.rate / rates.raw.rate)
      ratios.honoRaw.push(rates.hono.rate / rates.raw.rate)
      ratios.svcRawPerCpu.push(perCpu(rates.svc) / perCpu(rates.raw))
      console.log(
        `round ${round + 1}  req/s: ${show('raw', rates.raw)}, ${show('hono', rates.hono)}, ${show('svc', rates.svc)}; svc/raw ${(rates.svc.rate / rates.raw.rate).toFixed(3)}, per server CPU-second ${ratios.svcRawPerCpu.at(-1)!.toFixed(3)}`,
      )
    }
    for (const runtime of runtimes) {
      const order = round % 2 === 0 ? (['hono', 'svc'] as const) : (['svc', 'hono'] as const)
      const rates: Record<string, Measured> = {}
      for (const kind of order) rates[kind] = await httpRate(kind, runtime)
      const row = onRuntime[runtime.name]
      row.hono.push(rates.hono.rate)
      row.svc.push(rates.svc.rate)
      row.ratio.push(rates.svc.rate / rates.hono.rate)
      row.perCpu.push(perCpu(rates.svc) / perCpu(rates.hono))
      console.log(
        `        req/s on ${runtime.name}: ${show('hono', rates.hono)}, ${show('svc', rates.svc)}; svc/hono ${row.ratio.at(-1)!.toFixed(3)}, per server CPU-second ${row.perCpu.at(-1)!.toFixed(3)}`,
      )
    }
    if (runTracing) {
      const kinds = ['svc-untraced', 'svc', 'svc-sdk'] as const
      const rates: Record<string, Measured> = {}
      for (let i = 0; i < kinds.length; i++) {
        const kind = kinds[(i + round) % kinds.length]
        rates[kind] = await httpRate(kind)
      }
      tracing.api.push(rates.svc.rate / rates['svc-untraced'].rate)
      tracing.sdk.push(rates['svc-sdk'].rate / rates['svc-untraced'].rate)
      console.log(
        `        tracing req/s: ${show('off', rates['svc-untraced'])}, ${show('API, no SDK', rates.svc)}, ${show('SDK', rates['svc-sdk'])}`,
      )
    }
    if (runWs) {
      const wsOrder = round % 2 === 0 ? (['ws', 'svc-ws'] as const) : (['svc-ws', 'ws'] as const)
      const echo: Record<string, Measured> = {}
      for (const kind of wsOrder) echo[kind] = await echoRate(kind)
      ws.ws.push(echo.ws.rate)
      ws.svc.push(echo['svc-ws'].rate)
      ratios.svcWs.push(echo['svc-ws'].rate / echo.ws.rate)
      ratios.svcWsPerCpu.push(perCpu(echo['svc-ws']) / perCpu(echo.ws))
      console.log(
        `${runHttp ? '        ' : `round ${round + 1}`}  echo msg/s: ${show('ws', echo.ws)}, ${show('svc', echo['svc-ws'])}; svc/ws ${(echo['svc-ws'].rate / echo.ws.rate).toFixed(3)}, per server CPU-second ${ratios.svcWsPerCpu.at(-1)!.toFixed(3)}`,
      )
    }
  }
  console.log('\nmedians')
  if (runHttp) {
    const svcRaw = median(ratios.svcRaw)
    console.log(
      `  HTTP req/s     raw node:http ${fmt(median(http.raw))}   hono/node-server ${fmt(median(http.hono))}   svc ${fmt(median(http.svc))}`,
    )
    console.log(`  svc / raw      ${svcRaw.toFixed(3)}   goal >= ${HTTP_GOAL} ${svcRaw >= HTTP_GOAL ? 'met' : 'NOT met'}`)
    console.log(`  per server CPU-second: svc / raw ${median(ratios.svcRawPerCpu).toFixed(3)}`)
    console.log(`  hono / raw     ${median(ratios.honoRaw).toFixed(3)}`)
    for (const runtime of runtimes) {
      const row = onRuntime[runtime.name]
      console.log(`  HTTP req/s on ${runtime.name}   hono ${fmt(median(row.hono))}   svc ${fmt(median(row.svc))}`)
      console.log(`  svc / hono on ${runtime.name}  ${median(row.ratio).toFixed(3)}`)
      console.log(`  per server CPU-second: svc / hono on ${runtime.name} ${median(row.perCpu).toFixed(3)}`)
    }
  }
  if (runTracing) {
    const api = median(tracing.api)
    console.log(
      `  tracing: API, no SDK / off   ${api.toFixed(3)}   goal >= ${(1 / 1.03).toFixed(3)} ${api >= 1 / 1.03 ? 'met' : 'NOT met'}`,
    )
    console.log(`  tracing: SDK, dropping / off ${median(tracing.sdk).toFixed(3)}`)
  }
  if (runWs) {
    const svcWs = median(ratios.svcWs)
    console.log(`  WS echo msg/s  ws ${fmt(median(ws.ws))}   svc ${fmt(median(ws.svc))}`)
    console.log(`  svc / ws       ${svcWs.toFixed(3)}   goal >= ${WS_GOAL} ${svcWs >= WS_GOAL ? 'met' : 'NOT met'}`)
    console.log(`  per server CPU-second: svc / ws ${median(ratios.svcWsPerCpu).toFixed(3)}`)
  }
}

/** `bun 1.4.5`, `deno 2.9.6`: the first line the runtime prints for --version, minus its name. */
function runtimeVersion(runtime: OtherRuntime): string {
  const [binary] = runtime.command('')
  return execFileSync(binary, ['--version'], { encoding: 'utf8' })
    .split('\n')[0]
    .replace(/^deno /, '')
    .split(' ')[0]
}

await main()
