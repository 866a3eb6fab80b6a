/**
 * The anchors of bench/store.ts, on the benchmark's Postgres: graphile-worker
 * (a job queue) and DBOS Transact (durable workflows with steps).
 */
import { DBOS } from '@dbos-inc/dbos-sdk'
import { Logger, makeWorkerUtils, run, type RunnerOptions } from 'graphile-worker'
import { deferred, startLatency, throughput } from './_store-measure.ts'

/**
 * graphile-worker as bench/store.ts runs it, two ways:
 * - `defaults`: its defaults, but for how many jobs it runs at once. svc
 *   runs every due run of a process at once, so the worker gets as many
 *   slots as its pool can serve rather than its default of one.
 * - `perfTest`: as graphile-worker's own performance test tunes it
 *   (perfTest/graphile.config.js in its repository): 24 jobs at once on a
 *   pool of 25, a local queue that locks and fetches up to 500 jobs at a
 *   time, and jobs completed and failed in batches (`completeJobBatchDelay`
 *   and `failJobBatchDelay` of 0: the calls of one turn of the event loop
 *   go together).
 */
export const GRAPHILE_TUNINGS = {
  defaults: {
    label: 'graphile-worker, defaults (16 at once)',
    options: { concurrency: 16, maxPoolSize: 18 },
  },
  perfTest: {
    label: 'graphile-worker, its perfTest settings',
    options: {
      concurrency: 24,
      maxPoolSize: 25,
      preset: {
        worker: {
          localQueue: { size: 500, refetchDelay: { durationMs: 10 } },
          completeJobBatchDelay: 0,
          failJobBatchDelay: 0,
        },
      },
    },
  },
} satisfies Record<string, { label: string; options: Partial<RunnerOptions> }>

export type GraphileTuning = keyof typeof GRAPHILE_TUNINGS

const silent = new Logger(() => () => {})

export interface GraphileWorker {
  /** No-op jobs/s of `count` jobs added together, from the first `addJob` to the last job's end. */
  rate(count: number): Promise<number>
  /** p50 from `addJob` to the task starting, `rounds` jobs one at a time (`startLatency`). */
  p50(rounds: number): Promise<number>
  stop(): Promise<void>
}

/** A graphile-worker runner on `url` with `tuning`, and a way to add its jobs. */
export async function startGraphile(url: string, tuning: GraphileTuning): Promise<GraphileWorker> {
  let onStart: () => void = () => {}
  const runner = await run({
    connectionString: url,
    ...GRAPHILE_TUNINGS[tuning].options,
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
  return {
    async rate(count) {
      const { promise, resolve } = deferred()
      goal = completed + count
      reached = resolve
      const t0 = performance.now()
      await Promise.all(Array.from({ length: count }, () => utils.addJob('noop', {})))
      await promise
      return (count / (performance.now() - t0)) * 1000
    },
    p50: (rounds) =>
      startLatency(
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
      ),
    async stop() {
      await utils.release()
      await runner.stop()
    },
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
