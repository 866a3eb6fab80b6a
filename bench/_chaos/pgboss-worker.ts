// One pg-boss worker of the chaos harness (pgboss-side.ts), in a process of
// its own: pg-boss's counterpart of svc-server.ts. Usage:
//   pgboss-worker.ts <database URL> <effects log>
// It prints "ready" once it works both queues, which pgboss-side.ts has
// made. Its jobs append a line to the effects log each time a body of
// theirs runs, in svc-server.ts's format:
// - chaos.steps: effects a, b and c, each "<job> <effect> <pid> <exec>",
//   with a 0.2 s wait between a and b;
// - chaos.flaky: each attempt "<job> attempt <n> <pid> <exec>", failing
//   the first two; the queue's retryLimit is 2, so the third completes it.
// - chaos.ranked: 20 ms of work, one job at a time;
// - chaos.noop: nothing.
import { randomUUID } from 'node:crypto'
import { appendFileSync } from 'node:fs'
import { type Job, type JobResult, PgBoss } from 'pg-boss'

const [url, effects] = process.argv.slice(2)
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

const boss = new PgBoss({
  connectionString: url,
  // The name faults.ts's killBackends terminates, which svc's processes carry too.
  application_name: 'svc',
  // The monitor fails the jobs whose heartbeat stopped (a worker killed):
  // every second rather than every minute, so that a dead worker's jobs go
  // back to the queue as soon as their heartbeat allows.
  superviseIntervalSeconds: 1,
  monitorIntervalSeconds: 1,
  schedule: false,
  useListenNotify: true,
})
boss.on('error', (error) => console.error(error))

function effect(line: string): string {
  const exec = randomUUID().slice(0, 8)
  appendFileSync(effects, `${line} ${process.pid} ${exec}\n`)
  return exec
}

async function steps(job: Job): Promise<string[]> {
  const step = async (key: string) => {
    const exec = effect(`${job.id} ${key}`)
    await sleep(5)
    return exec
  }
  const a = await step('a')
  await sleep(200)
  const b = await step('b')
  const c = await step('c')
  return [a, b, c]
}

async function flaky(job: Job): Promise<number> {
  // retryCount counts the claims before this one (pg-boss's Job type).
  const attempt = job.retryCount + 1
  effect(`${job.id} attempt ${attempt}`)
  await sleep(5)
  if (attempt < 3) throw new Error(`attempt ${attempt} fails on purpose`)
  return attempt
}

/**
 * A handler of a batch that runs its jobs at once and settles each on its
 * own, so that a batch holds as many jobs in flight as an svc process
 * holds runs, and one job's failure is its own.
 */
function perJob(body: (job: Job) => Promise<unknown>) {
  return (jobs: Job[]): Promise<JobResult[]> =>
    Promise.all(
      jobs.map(async (job): Promise<JobResult> => {
        try {
          return { id: job.id, status: 'completed', output: { value: await body(job) } }
        } catch (error) {
          return { id: job.id, status: 'failed', output: { message: (error as Error).message } }
        }
      }),
    )
}

// Up to 100 jobs in flight a process: 10 fetch loops of batches of 10.
// A notification wakes them for a new job but not for a retry, which only
// a poll finds, so they poll at pg-boss's shortest interval with or without
// notifications (30 s by default with them).
const work = {
  localConcurrency: 10,
  batchSize: 10,
  perJobResults: true,
  pollingIntervalSeconds: 0.5,
  notifyPollingIntervalSeconds: 0.5,
} as const

await boss.start()
await boss.work('chaos.steps', work, perJob(steps))
await boss.work('chaos.flaky', work, perJob(flaky))
await boss.work(
  'chaos.noop',
  work,
  perJob(async () => 1),
)
// One job at a time a process: two workers hold the two slots svc's chaos.ranked has.
await boss.work(
  'chaos.ranked',
  { ...work, localConcurrency: 1, batchSize: 1 },
  perJob(() => sleep(20)),
)
process.stdout.write('ready\n')
