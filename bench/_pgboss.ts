/**
 * pg-boss, a peer of bench/store.ts on the benchmark's Postgres, driven as
 * graphile-worker is in bench/_store-anchors.ts: a worker instance that
 * runs no-op jobs, and a sender of its own, as graphile-worker's jobs are
 * added through its `makeWorkerUtils`. Each worker starts on a fresh schema,
 * as svc's stores start on fresh tables. Each job is its own `send`, as
 * each svc run is its own `trigger()` and each graphile-worker job its own
 * `addJob`; pg-boss's `insert()` of many jobs in one statement is the
 * counterpart of svc's `triggerMany`, not of these.
 */
import { type ConstructorOptions, PgBoss, type Queue, type WorkOptions } from 'pg-boss'
import { startLatency } from './_store-measure.ts'

const QUEUE = 'noop'

/** What both settings share: the workers' fetch loops. */
const WORK = {
  batchSize: 50,
  burstWhenBatchFull: true,
  localConcurrency: 4,
  pollingIntervalSeconds: 0.5,
} satisfies WorkOptions

/**
 * pg-boss as its documentation says to tune it (the pgboss.io pages are
 * docs/api/*.md in its repository), two ways:
 * - `throughput`, for its rate:
 *   - `batchSize` (workers.md, and `fetch()` in jobs.md): a worker claims
 *     up to 50 jobs a fetch, and a batch handler that returns completes
 *     them all in one statement ("by default a batch handler is
 *     all-or-nothing");
 *   - `burstWhenBatchFull` (workers.md): while fetches come back full, a
 *     worker fetches again at once instead of waiting for its poll;
 *   - `localConcurrency` (workers.md): 4 fetch loops in the process, each
 *     with a batch in hand. Of 2, 4, 8 and 16 loops of batches of 10, 50
 *     and 100 tried on this benchmark's 2-core machine, 2 to 8 did about
 *     alike and 16 worse: each fetch and each completion is a commit of
 *     its own, which competes with the sends' commits for the disk's
 *     flushes. The pool (`max`, constructor.md) stays at its default of
 *     10, more than the loops hold at once;
 *   - `pollingIntervalSeconds` at its least, 0.5 s (workers.md);
 *   - LISTEN/NOTIFY off, its default: workers.md presents it as a latency
 *     optimization, and here it costs throughput: Postgres holds a lock
 *     across the commit of a transaction that sent a NOTIFY, so such
 *     commits go one at a time rather than sharing WAL flushes. The sends
 *     alone went from about 1,200/s to 700/s with it on, and the rate to
 *     a third;
 *   - `schedule: false` (constructor.md): no cron here, so no timers for it.
 * - `latency`, for its p50 send → start: the same, with `useListenNotify`
 *   on the instance (constructor.md) and `notify` on the queue
 *   (queues.md), so that a new job wakes the workers at once rather than
 *   at their next poll ("Low-latency dispatch with LISTEN/NOTIFY",
 *   workers.md), as it wakes svc's store and graphile-worker; its poll,
 *   now a fallback, at its least too (`notifyPollingIntervalSeconds`).
 */
export const PGBOSS_TUNINGS = {
  throughput: {
    label: 'pg-boss, tuned for throughput',
    instance: { schedule: false },
    queue: {},
    work: WORK,
  },
  latency: {
    label: 'pg-boss, LISTEN/NOTIFY on',
    instance: { schedule: false, useListenNotify: true },
    queue: { notify: true },
    work: { ...WORK, notifyPollingIntervalSeconds: 0.5 },
  },
} satisfies Record<string, { label: string; instance: Partial<ConstructorOptions>; queue: Omit<Queue, 'name'>; work: WorkOptions }>

export type PgBossTuning = keyof typeof PGBOSS_TUNINGS

export interface PgBossWorker {
  /** No-op jobs/s of `count` jobs sent together, from the first `send` to the last job completed. */
  rate(count: number): Promise<number>
  /** p50 from `send` to the handler starting, `rounds` jobs one at a time (`startLatency`). */
  p50(rounds: number): Promise<number>
  stop(): Promise<void>
}

let schemas = 0

/** A pg-boss worker on `url` with `tuning`, on a fresh schema. */
export async function startPgBoss(url: string, tuning: PgBossTuning): Promise<PgBossWorker> {
  const { instance, queue, work } = PGBOSS_TUNINGS[tuning]
  const schema = `pgboss_${process.pid}_${++schemas}`
  const boss = new PgBoss({ connectionString: url, schema, ...instance })
  // Its own pool at pg-boss's default of 10, as graphile-worker's makeWorkerUtils has the pg driver's
  // 10; sends queue for a connection as long as they must (`connectionTimeoutMillis: 0`, constructor.md),
  // since all of a round's jobs are sent at once.
  const sender = new PgBoss({ connectionString: url, schema, supervise: false, schedule: false, connectionTimeoutMillis: 0 })
  for (const instance of [boss, sender]) instance.on('error', (error) => console.error('pg-boss:', error))
  await boss.start()
  await sender.start()
  await boss.createQueue(QUEUE, queue)

  let onStart: () => void = () => {}
  let handled = 0
  await boss.work(QUEUE, work, async (jobs) => {
    onStart()
    handled += jobs.length
  })
  // A job is completed once its worker's handler returned and pg-boss's
  // completion of its batch committed; then the worker drops the batch from
  // its work in progress, which getWipData() reads from memory.
  const completed = async (goal: number) => {
    while (handled < goal || boss.getWipData().some((worker) => worker.count > 0)) {
      await new Promise((resolve) => setTimeout(resolve, 1))
    }
  }
  const send = async () => {
    if ((await sender.send(QUEUE, {})) === null) throw new Error('bench:store: pg-boss did not create a job')
  }
  return {
    async rate(count) {
      const goal = handled + count
      const t0 = performance.now()
      await Promise.all(Array.from({ length: count }, send))
      await completed(goal)
      return (count / (performance.now() - t0)) * 1000
    },
    p50: (rounds) =>
      startLatency(
        rounds,
        async () => {
          const goal = handled + 1
          await send()
          return () => completed(goal)
        },
        (started) => {
          onStart = started
        },
      ),
    async stop() {
      await sender.stop({ graceful: false })
      await boss.stop({ graceful: true })
    },
  }
}
