// One svc server of the chaos harness (cluster.ts), in a process of its own
// on a PostgresRunStore. Usage:
//   svc-server.ts <database URL> <effects log> [leaseMs] [pollMs]
// It prints "port <n>" once it listens. Its tasks append a line to the
// effects log each time a body of theirs runs, so the harness can count
// what ran, where, and how often:
// - chaos.steps: steps a, b and c, each "<run> <step> <pid> <exec>", each
//   returning its exec id, with a short sleep between a and b;
// - chaos.flaky: each attempt "<run> attempt <n> <pid> <exec>", failing
//   the first two; `retries: 2`, so the third completes it;
// - chaos.noop: one step and nothing else, for throughput (no effects);
// - chaos.ranked: 20 ms of work, two at a time (`concurrency: 2`), for runs
//   of several priorities to queue behind each other.
import { appendFileSync } from 'node:fs'
import { randomUUID } from 'node:crypto'
import { startSvcServer } from '../../src/node.ts'
import { PostgresRunStore } from '../../src/postgres.ts'
import type { TaskContext } from '../../src/types.ts'

const [url, effects, leaseMs, pollMs] = process.argv.slice(2)
const toStderr = (...args: unknown[]) => console.error(...args)
const logger = { info: toStderr, warn: toStderr, error: toStderr }

const store = new PostgresRunStore({
  url,
  leaseMs: leaseMs === undefined ? undefined : Number(leaseMs),
  pollMs: pollMs === undefined ? undefined : Number(pollMs),
  logger,
})
await store.ready()

function effect(line: string): string {
  const exec = randomUUID().slice(0, 8)
  appendFileSync(effects, `${line} ${process.pid} ${exec}\n`)
  return exec
}

const server = await startSvcServer({
  port: 0,
  pages: [],
  store,
  shutdownTimeoutMs: 300,
  logger,
  apiRoutes: [
    {
      path: '/api/chaos/steps',
      module: {
        route: { kind: 'task' },
        async POST(ctx: TaskContext) {
          const step = (key: string) =>
            ctx.step.run(key, async () => {
              const exec = effect(`${ctx.runId} ${key}`)
              await new Promise((resolve) => setTimeout(resolve, 5))
              return exec
            })
          const a = await step('a')
          await ctx.step.sleep('nap', 0.2)
          const b = await step('b')
          const c = await step('c')
          return [a, b, c]
        },
      },
    },
    {
      path: '/api/chaos/noop',
      module: {
        route: { kind: 'task' },
        async POST(ctx: TaskContext) {
          return ctx.step.run('a', () => 1)
        },
      },
    },
    {
      path: '/api/chaos/ranked',
      module: {
        route: { kind: 'task', concurrency: 2 },
        async POST() {
          await new Promise((resolve) => setTimeout(resolve, 20))
          return 1
        },
      },
    },
    {
      path: '/api/chaos/flaky',
      module: {
        route: { kind: 'task', retries: 2 },
        async POST(ctx: TaskContext) {
          effect(`${ctx.runId} attempt ${ctx.attempt}`)
          await new Promise((resolve) => setTimeout(resolve, 5))
          if (ctx.attempt < 3) throw new Error(`attempt ${ctx.attempt} fails on purpose`)
          return ctx.attempt
        },
      },
    },
  ],
})
process.stdout.write(`port ${server.port}\n`)
