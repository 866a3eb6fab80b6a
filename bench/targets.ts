/**
 * Target benchmarks (not timed tests):
 * - gzipped size of the cloudflare worker built for a hello app (goal ≤ 50 KB);
 * - cold start of the node build, from spawn to the first 200 (goal ≤ 150 ms),
 *   next to a bare node:http server started and probed the same way;
 * - the Durable Object store at its bound of 10,000 and 100,000 retained
 *   runs: the object's time per run for a run's writes, and its growth
 *   (goal ≤ 1.5).
 *
 * Run: npm run bench:targets
 */
import { spawn } from 'node:child_process'
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { buildApp } from '../src/build/build.ts'
import { durableStoreAtBound } from './_durable-store.ts'

const ROUNDS = 9

async function helloApp(): Promise<string> {
  const root = await mkdtemp(join(tmpdir(), 'svc-bench-targets-'))
  await mkdir(join(root, 'src/api'), { recursive: true })
  await writeFile(join(root, 'src/api/hello.ts'), `export function GET() {\n  return { hello: 'world' }\n}\n`)
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

const RETAINED_SIZES = [10_000, 100_000]
const GROWTH_GOAL = 1.5

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]

const root = await helloApp()
try {
  const worker = await buildApp({ root, target: 'cloudflare' })
  const bundle = worker.files.find((file) => file.path.endsWith('index.mjs'))!
  console.log(
    `cloudflare worker (hello app): ${(bundle.bytes / 1024).toFixed(1)} KB, ${(bundle.gzipBytes! / 1024).toFixed(1)} KB gzipped (goal ≤ 50 KB gzipped)`,
  )

  await buildApp({ root, target: 'node' })
  const server = join(root, '.output/node/server.mjs')
  const bare = join(root, 'bare.mjs')
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
  console.log(`node build cold start to first 200: ${svc.toFixed(0)} ms median of ${ROUNDS} (goal ≤ 150 ms)`)
  console.log(
    `bare node:http cold start, same probe:  ${base.toFixed(0)} ms median; svc adds ${(svc - base).toFixed(0)} ms (ratio ${(svc / base).toFixed(2)})`,
  )
} finally {
  await rm(root, { recursive: true, force: true })
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
