/**
 * Durable Object runs/s in workerd (Miniflare) with task runs spread over 4
 * `SvcTasks` objects against 1, for bench/targets.ts. The same app is built
 * twice, once per shard count (`svc.cloudflare.shards` in package.json);
 * each round starts a fresh worker on empty storage, sends `RUNS` runs of
 * three `step.run` in `BATCHES` batch triggers at once, and times them
 * from the first trigger until none is live. The rounds alternate the two
 * builds, so a machine that gets busier slows both alike.
 *
 * It also reports the CPU workerd used over each round's wall time (from
 * /proc): the objects of one worker share its process here, so the figure
 * shows how much of the ratio the machine's cores, not the objects, bound.
 *
 * Run alone: node bench/_do-shards.ts (bench:targets runs it last).
 */
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { cpus, tmpdir } from 'node:os'
import { join } from 'node:path'
import { buildApp } from '../src/build/build.ts'
import { procCpu } from './_proc-cpu.ts'
import { startBuiltWorker } from '../test/targets/_wrangler.ts'

const RUNS = 4_000
const BATCHES = 8
const SECRET = 'bench-secret-0123456789abcdef01234567'

const TASK = `export const kind = 'task'
export async function POST(ctx: { input: { n: number }; step: any }) {
  const a = await ctx.step.run('a', () => ctx.input.n)
  const b = await ctx.step.run('b', () => a + 1)
  return ctx.step.run('c', () => b + 1)
}
`

export interface ShardRound {
  runsPerSecond: number
  /** workerd's CPU seconds over the round's wall seconds: 1 is one core busy throughout. */
  cores: number | undefined
  /** The same for this process, which sends the requests through Miniflare. */
  benchCores: number | undefined
}

export interface ShardsFigures {
  one: ShardRound
  four: ShardRound
  /** CPU cores of this machine. */
  machineCores: number
}

/** Median runs/s (and workerd's cores) of 1 and of 4 shards over `rounds` alternating rounds. */
export async function durableObjectShards(rounds = 3): Promise<ShardsFigures> {
  const root = await mkdtemp(join(tmpdir(), 'svc-bench-shards-'))
  try {
    await mkdir(join(root, 'src/api/jobs'), { recursive: true })
    await writeFile(join(root, 'src/api/jobs/work.ts'), TASK)
    const one = await build(root, 1)
    const four = await build(root, 4)
    const times: Record<'one' | 'four', ShardRound[]> = { one: [], four: [] }
    await round(one) // warm-up: workerd's first start, the disk cache
    for (let i = 0; i < rounds; i++) {
      times.one.push(await round(one))
      times.four.push(await round(four))
    }
    return { one: median(times.one), four: median(times.four), machineCores: cpus().length }
  } finally {
    await rm(root, { recursive: true, force: true })
  }
}

/** The app built with `shards`, copied out of the way of the next build. */
async function build(root: string, shards: number): Promise<string> {
  await writeFile(join(root, 'package.json'), JSON.stringify({ name: 'bench-shards', type: 'module', svc: { cloudflare: { shards } } }))
  await buildApp({ root, target: 'cloudflare' })
  const out = join(root, `.output-${shards}`)
  await mkdir(out, { recursive: true })
  for (const file of ['index.mjs', 'wrangler.json'])
    await writeFile(join(out, file), await readFile(join(root, '.output/cloudflare', file)))
  return out
}

async function round(out: string): Promise<ShardRound> {
  const persist = await mkdtemp(join(tmpdir(), 'svc-bench-shards-do-'))
  const mf = await startBuiltWorker(out, { SVC_TASK_SECRET: SECRET }, persist)
  const call = async (path: string, body?: unknown) => {
    const res = await mf.dispatchFetch(`http://worker${path}`, {
      method: body === undefined ? 'GET' : 'POST',
      headers: { authorization: `Bearer ${SECRET}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    })
    const answer = (await res.json()) as any
    if (!res.ok) throw new Error(`${path} answered ${res.status}: ${JSON.stringify(answer)}`)
    return answer
  }
  try {
    // Every object wakes (and creates its tables) before the clock starts.
    await call('/__tasks/runs?limit=1')
    const workerd = await workerdPid()
    const cpuBefore = workerd === undefined ? undefined : procCpu(workerd)?.self
    const ownBefore = procCpu('self')?.self
    const started = performance.now()
    const size = RUNS / BATCHES
    await Promise.all(
      Array.from({ length: BATCHES }, (_, b) =>
        call(
          '/__tasks/jobs.work/batch',
          Array.from({ length: size }, (_, i) => ({ n: b * size + i })),
        ),
      ),
    )
    const live = '/__tasks/runs?task=jobs.work&status=scheduled&status=queued&status=running&status=suspended&limit=1'
    while ((await call(live)).runs.length > 0) await new Promise((resolve) => setTimeout(resolve, 10))
    const seconds = (performance.now() - started) / 1000
    const cpuAfter = workerd === undefined ? undefined : procCpu(workerd)?.self
    const ownAfter = procCpu('self')?.self
    const share = (before: number | undefined, after: number | undefined) =>
      before === undefined || after === undefined ? undefined : (after - before) / seconds
    return { runsPerSecond: RUNS / seconds, cores: share(cpuBefore, cpuAfter), benchCores: share(ownBefore, ownAfter) }
  } finally {
    await mf.dispose()
    await rm(persist, { recursive: true, force: true })
  }
}

/** The workerd process Miniflare started for this one, found among its children in /proc. */
async function workerdPid(): Promise<number | undefined> {
  const pids = await readdir('/proc').catch(() => [] as string[])
  for (const pid of pids) {
    if (!/^\d+$/.test(pid)) continue
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '')
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    if (stat.includes('(workerd)') && Number(fields[1]) === process.pid) return Number(pid)
  }
  return undefined
}

/** Measures, then prints the figures and the ratio with what bounds it. */
export async function reportDurableObjectShards(): Promise<void> {
  const shards = await durableObjectShards()
  const busy = (round: ShardRound) =>
    round.cores === undefined ? '' : `; CPU: workerd ${round.cores.toFixed(2)} cores, this process ${round.benchCores?.toFixed(2)}`
  console.log(`durable objects, ${RUNS.toLocaleString('en')} runs of three steps a round, median of 3, on ${shards.machineCores} core(s):`)
  console.log(`  1 shard:  ${shards.one.runsPerSecond.toFixed(0)} runs/s${busy(shards.one)}`)
  console.log(`  4 shards: ${shards.four.runsPerSecond.toFixed(0)} runs/s${busy(shards.four)}`)
  console.log(
    `  4 shards / 1: ${(shards.four.runsPerSecond / shards.one.runsPerSecond).toFixed(2)} x. Bound: here one workerd process runs every ` +
      'object of the worker (its CPU above), fed by this process through Miniflare; on Cloudflare each object has a CPU of its own',
  )
}

if (import.meta.main) await reportDurableObjectShards()

function median(rounds: ShardRound[]): ShardRound {
  return [...rounds].sort((a, b) => a.runsPerSecond - b.runsPerSecond)[Math.floor(rounds.length / 2)]
}
