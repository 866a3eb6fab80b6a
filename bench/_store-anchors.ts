/**
 * The anchors of bench/store.ts, on the benchmark's Postgres: graphile-worker
 * (a job queue) and DBOS Transact (durable workflows with steps).
 */
import { DBOS } from '@dbos-inc/dbos-sdk'
import { Logger, makeWorkerUtils, run } from 'graphile-worker'
import { deferred, startLatency, throughput } from './_store-measure.ts'

/**
 * How many jobs graphile-worker runs at once, and its pool: svc runs every
 * due run of a process at once, so the worker gets as many slots as its
 * pool can serve rather than its default of one.
 */
export const GRAPHILE_CONCURRENCY = 16
const GRAPHILE_POOL = GRAPHILE_CONCURRENCY + 2

const silent = new Logger(() => () => {})

export interface GraphileFigures {
  jobsPerSecond: number
  p50Ms: number
}

/** No-op jobs/s over `count` jobs added together, and p50 from `addJob` to the task starting. */
export async function measureGraphile(url: string, count: number, rounds: number): Promise<GraphileFigures> {
  let onStart: () => void = () => {}
  const runner = await run({
    connectionString: url,
    concurrency: GRAPHILE_CONCURRENCY,
    maxPoolSize: GRAPHILE_POOL,
    noHandleSignals: true,
    // New jobs wake the worker by LISTEN/NOTIFY, as they wake svc's store;
    // the poll is svc's default pollMs, only a fallback on both sides.
    pollInterval: 1000,
    logger: silent,
    taskList: {
      noop: async () => onStart(),
    },
  })
  // A job can finish before its addJob resolves, so jobs are awaited by count.
  let completed = 0
  let goal = Number.POSITIVE_INFINITY
  let reached = () => {}
  runner.events.on('job:complete', () => {
    if (++completed >= goal) reached()
  })
  const utils = await makeWorkerUtils({ connectionString: url, logger: silent })
  try {
    const round = async (n: number) => {
      const { promise, resolve } = deferred()
      goal = completed + n
      reached = resolve
      const t0 = performance.now()
      await Promise.all(Array.from({ length: n }, () => utils.addJob('noop', {})))
      await promise
      return (n / (performance.now() - t0)) * 1000
    }
    await round(Math.min(200, count)) // warm-up
    const jobsPerSecond = await round(count)
    const p50Ms = await startLatency(
      rounds,
      async () => {
        const { promise, resolve } = deferred()
        goal = completed + 1
        reached = resolve
        await utils.addJob('noop', {})
        return () => promise
      },
      (started) => {
        onStart = started
      },
    )
    return { jobsPerSecond, p50Ms }
  } finally {
    await utils.release()
    await runner.stop()
  }
}

/**
 * Workflows/s of a workflow of three steps, `count` started together, or the
 * reason DBOS could not run here.
 */
export async function measureDbos(url: string, count: number): Promise<number | { reason: string }> {
  const threeSteps = DBOS.registerWorkflow(
    async () => {
      for (const key of ['a', 'b', 'c']) await DBOS.runStep(async () => key, { name: key })
    },
    { name: 'threeSteps' },
  )
  try {
    DBOS.setConfig({ name: 'svc-bench', systemDatabaseUrl: url, logLevel: 'error', runAdminServer: false })
    await DBOS.launch()
  } catch (error) {
    return { reason: `DBOS.launch() failed: ${(error as Error).message}` }
  }
  try {
    const start = async () => {
      const handle = await DBOS.startWorkflow(threeSteps)()
      return () => handle.getResult()
    }
    await throughput(Math.min(200, count), start) // warm-up
    return await throughput(count, start)
  } finally {
    await DBOS.shutdown()
  }
}
