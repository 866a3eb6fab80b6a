/**
 * Target benchmarks (not timed tests):
 * - gzipped size of the cloudflare worker built for two reference apps
 *   (bench/_apps/): `routes`, one JSON route and one with a parameter and a
 *   schema (goal ≤ 2.0 x Hono's own hello worker bundled with the same
 *   settings), and `tasks`, the same plus a task with three steps and a
 *   sleep on the Durable Object store (goal ≤ 40 KiB), each with its parts'
 *   shares; the playground's worker is printed without a goal, since it grows
 *   with what it shows; `node bench/_bundle-parts.ts <app>` lists modules;
 * - the node build's server.mjs for both reference apps: a server of routes
 *   carries no task engine or run store;
 * - cold start of the node build, from spawn to the first 200 (goal ≤ 150 ms),
 *   next to a bare node:http server started and probed the same way;
 * - the Durable Object store at its bound of 10,000 and 100,000 retained
 *   runs: the object's time per run for a run's writes, and its growth
 *   (goal ≤ 1.5);
 * - Durable Object runs/s with runs spread over 4 tasks objects against 1
 *   (`_do-shards.ts`), as a ratio, with the CPU workerd used.
 *
 * Run: npm run bench:targets
 */
import { spawn } from 'node:child_process'
import { cp, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { gzipSync } from 'node:zlib'
import { buildApp } from '../src/build/build.ts'
import { bundle } from '../src/build/bundle.ts'
import { bundleParts, groupShares } from './_bundle-parts.ts'
import { durableStoreAtBound } from './_durable-store.ts'
import { reportDurableObjectShards } from './_do-shards.ts'

const ROUNDS = 9

/** A copy of a reference app (bench/_apps/<name>) to build, with this repository's dependencies. */
async function referenceApp(name: 'routes' | 'tasks'): Promise<string> {
  const root = await mkdtemp(join(tmpdir(), `svc-bench-targets-${name}-`))
  await cp(fileURLToPath(new URL(`./_apps/${name}`, import.meta.url)), root, { recursive: true })
  // A node build keeps the app's dependencies external; they resolve from here.
  await symlink(fileURLToPath(new URL('../node_modules', import.meta.url)), join(root, 'node_modules'))
  return root
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number }
      server.close(() => resolve(port))
    })
  })
}

/** Milliseconds from spawn until `url` first answers 200. */
async function coldStart(args: string[], url: (port: number) => string): Promise<number> {
  const port = await freePort()
  const started = performance.now()
  const child = spawn(process.execPath, args, {
    env: { ...process.env, PORT: String(port), HOST: '127.0.0.1', NODE_ENV: 'production' },
    stdio: 'ignore',
  })
  try {
    for (;;) {
      try {
        const res = await fetch(url(port))
        await res.arrayBuffer()
        if (res.status === 200) return performance.now() - started
      } catch {
        // not listening yet
      }
      if (performance.now() - started > 10_000) throw new Error(`${args.join(' ')} did not answer within 10 s`)
      await new Promise((resolve) => setTimeout(resolve, 1))
    }
  } finally {
    child.kill('SIGKILL')
    await new Promise((resolve) => child.once('exit', resolve))
  }
}

/** Hono's hello app, bundled as svc bundles a worker: its size is the floor a worker that routes with Hono starts from. */
async function honoHelloWorker(): Promise<number> {
  const svcRoot = fileURLToPath(new URL('..', import.meta.url))
  const { code } = await bundle({
    // A virtual entry in svc's folder, so `hono` resolves to svc's own copy.
    input: join(svcRoot, '__hono_hello.mjs'),
    entrySource: `import { Hono } from 'hono'\nexport default new Hono().get('/api/hello', (c) => c.json({ hello: 'world' }))\n`,
    platform: 'worker',
    cwd: svcRoot,
  })
  return gzipSync(code).length
}

/** The gzipped size of the worker `svc build --target cloudflare` writes for the app at `root`. */
async function workerGzipBytes(root: string): Promise<number> {
  const built = await buildApp({ root, target: 'cloudflare' })
  return built.files.find((file) => file.path.endsWith('index.mjs'))!.gzipBytes!
}

const kib = (bytes: number) => `${(bytes / 1024).toFixed(1)} KiB`

const ROUTES_GOAL_RATIO = 2
const TASKS_GOAL_KIB = 40
const RETAINED_SIZES = [10_000, 100_000]
const GROWTH_GOAL = 1.5

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]

const hono = await honoHelloWorker()
console.log(`hono's hello worker, same bundler settings: ${kib(hono)} gzipped`)

/** Each group's gzipped share of an app's worker, as one line. */
async function shares(root: string): Promise<string> {
  const top = groupShares((await bundleParts(root)).parts).slice(0, 6)
  return top.map(([group, share]) => `${group} ${kib(share.gzipBytes)}`).join(', ')
}

const routes = await referenceApp('routes')
const tasks = await referenceApp('tasks')
try {
  const routesWorker = await workerGzipBytes(routes)
  const ratio = routesWorker / hono
  console.log(
    `cloudflare worker (routes app): ${kib(routesWorker)} gzipped, ${ratio.toFixed(2)} x hono's hello worker (goal ≤ ${ROUTES_GOAL_RATIO}) ${ratio <= ROUTES_GOAL_RATIO ? 'ok' : 'MISSED'}`,
  )
  console.log(`  largest shares: ${await shares(routes)}`)
  const tasksWorker = await workerGzipBytes(tasks)
  console.log(
    `cloudflare worker (tasks app): ${kib(tasksWorker)} gzipped (goal ≤ ${TASKS_GOAL_KIB} KiB) ${tasksWorker <= TASKS_GOAL_KIB * 1024 ? 'ok' : `MISSED by ${kib(tasksWorker - TASKS_GOAL_KIB * 1024)}`}`,
  )
  console.log(`  largest shares: ${await shares(tasks)}`)
  const playground = await workerGzipBytes(fileURLToPath(new URL('../playground', import.meta.url)))
  console.log(
    `cloudflare worker (playground app): ${kib(playground)} gzipped, ${(playground / hono).toFixed(1)} x hono's hello worker (no goal)`,
  )

  for (const root of [routes, tasks]) await buildApp({ root, target: 'node' })
  const serverSize = async (root: string) => gzipSync(await readFile(join(root, '.output/node/server.mjs'))).length
  const [routesServer, tasksServer] = [await serverSize(routes), await serverSize(tasks)]
  console.log(
    `node build server.mjs: routes app ${kib(routesServer)} gzipped, tasks app ${kib(tasksServer)} (routes ÷ tasks ${(routesServer / tasksServer).toFixed(2)})`,
  )

  const server = join(routes, '.output/node/server.mjs')
  const bare = join(routes, 'bare.mjs')
  await writeFile(
    bare,
    `import { createServer } from 'node:http'\ncreateServer((req, res) => { res.setHeader('content-type', 'application/json'); res.end('{"hello":"world"}') }).listen(Number(process.env.PORT), process.env.HOST)\n`,
  )
  const svcTimes: number[] = []
  const bareTimes: number[] = []
  await coldStart([server], (port) => `http://127.0.0.1:${port}/api/hello`) // warm the disk cache
  for (let i = 0; i < ROUNDS; i++) {
    // Alternate the contenders so machine noise hits both alike.
    bareTimes.push(await coldStart([bare], (port) => `http://127.0.0.1:${port}/`))
    svcTimes.push(await coldStart([server], (port) => `http://127.0.0.1:${port}/api/hello`))
  }
  const svc = median(svcTimes)
  const base = median(bareTimes)
  console.log(`node build cold start to first 200 (routes app): ${svc.toFixed(0)} ms median of ${ROUNDS} (goal ≤ 150 ms)`)
  console.log(
    `bare node:http cold start, same probe:  ${base.toFixed(0)} ms median; svc adds ${(svc - base).toFixed(0)} ms (ratio ${(svc / base).toFixed(2)})`,
  )
} finally {
  await rm(routes, { recursive: true, force: true })
  await rm(tasks, { recursive: true, force: true })
}

const perRun = await durableStoreAtBound(RETAINED_SIZES)
for (const [i, retained] of RETAINED_SIZES.entries()) {
  console.log(
    `durable object store, ${retained.toLocaleString('en')} retained: ${perRun[i].toFixed(0)} µs a run (created and ended, evicting the oldest)`,
  )
}
const growth = perRun.at(-1)! / perRun[0]
console.log(
  `  cost per run ${RETAINED_SIZES.at(-1)!.toLocaleString('en')} / ${RETAINED_SIZES[0].toLocaleString('en')}: ${growth.toFixed(2)} x (goal ≤ ${GROWTH_GOAL}) ${growth <= GROWTH_GOAL ? 'ok' : 'MISSED'}`,
)

await reportDurableObjectShards()
