/**
 * Wake-up latency of engines sharing one PostgresRunStore, on an embedded
 * Postgres (`node bench/postgres-wakeup.ts`). Two runtimes, each with its
 * own store and connections, stand for two processes. Reports p50 and p90
 * of:
 * - trigger → start: `trigger()` on A to the first line of the handler;
 * - handover → start: A shuts down mid-attempt, to B starting the attempt
 *   again (B polls only every 60 s, so what wakes it is A's NOTIFY);
 * Goal for trigger → start and handover → start: at most 20 ms p50.
 */
import { startEmbeddedPostgres } from '../test/postgres/_embedded.ts'
import { PostgresRunStore } from '../src/postgres.ts'
import { createTaskRuntime } from '../src/runtime/tasks/index.ts'
import type { Logger, RuntimeApiRoute, TaskContext, TaskRuntime } from '../src/types.ts'

const ROUNDS = 30
const quiet: Logger = { info() {}, warn() {}, error: (...args) => console.error(...args) }
const percentile = (values: number[], p: number) => [...values].sort((a, b) => a - b)[Math.floor(values.length * p)]

const startedAt = new Map<string, number>()
const gates = new Map<string, () => void>()
const routes: RuntimeApiRoute[] = [
  { path: '/api/noop', module: { kind: 'task', POST: (ctx: TaskContext) => void startedAt.set(ctx.runId, performance.now()) } },
  {
    path: '/api/hold',
    module: {
      kind: 'task',
      POST: (ctx: TaskContext) => {
        startedAt.set(ctx.runId, performance.now())
        // Held until the bench lets go, so the engine closes mid-attempt.
        return new Promise<void>((resolve) => gates.set(ctx.runId, resolve))
      },
    },
  },
]

const pg = await startEmbeddedPostgres()
const url = pg.url
const open = async (pollMs: number): Promise<{ runtime: TaskRuntime; store: PostgresRunStore }> => {
  const store = new PostgresRunStore({ url, pollMs, leaseMs: 600_000 })
  await store.ready()
  const runtime = createTaskRuntime({ routes, store, logger: quiet })
  await runtime.recover()
  return { runtime, store }
}
const until = async (check: () => boolean) => {
  while (!check()) await new Promise((resolve) => setImmediate(resolve))
}

try {
  const b = await open(60_000)

  const trigger: number[] = []
  const a = await open(60_000)
  for (let i = 0; i < ROUNDS + 5; i++) {
    const t0 = performance.now()
    const run = await a.runtime.trigger('noop')
    await until(() => startedAt.has(run.id))
    if (i >= 5) trigger.push(startedAt.get(run.id)! - t0)
  }
  await a.runtime.close()
  await a.store.close()

  const handover: number[] = []
  const closeMs: number[] = []
  for (let i = 0; i < ROUNDS; i++) {
    const first = await open(60_000)
    const run = await first.runtime.trigger('hold')
    await until(() => startedAt.has(run.id))
    startedAt.delete(run.id)
    const t0 = performance.now()
    await first.runtime.close()
    closeMs.push(performance.now() - t0)
    await until(() => startedAt.has(run.id))
    handover.push(startedAt.get(run.id)! - t0)
    gates.get(run.id)?.()
    await first.store.close()
  }

  const line = (label: string, values: number[]) =>
    console.log(
      `${label.padEnd(40)} p50 ${percentile(values, 0.5).toFixed(1).padStart(7)} ms   p90 ${percentile(values, 0.9).toFixed(1).padStart(7)} ms`,
    )
  line('trigger → start (one engine)', trigger)
  line('handover on close → start (NOTIFY)', handover)
  line('close()', closeMs)
  await b.runtime.close()
  await b.store.close()
} finally {
  await pg.stop()
}
