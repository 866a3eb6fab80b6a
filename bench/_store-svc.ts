/**
 * svc's side of bench/store.ts: the benchmark's tasks, a task runtime over
 * a fresh store per measurement, and the figures measured on each store.
 */
import { createTaskRuntime } from '../src/runtime/tasks/index.ts'
import type { RunStore } from '../src/runtime/tasks/store/store.ts'
import type { Logger, RuntimeApiRoute, TaskContext } from '../src/types.ts'
import { startLatency, throughput } from './_store-measure.ts'

/** Runs of a rate round, triggered together. */
export const RUNS = 3000
/** Rounds of a p50, one at a time. */
export const ROUNDS = 200
/** Every run of a round is kept, so no store evicts or fills up mid-round. */
export const MAX_RUNS = 100_000
/** Runs suspended on a sleep beside the one a send resumes, in the crowded measurement. */
export const CROWD = 5000

const quiet: Logger = { info() {}, warn() {}, error: (...args) => console.error(...args) }

export type OpenStore = (label: string) => Promise<{ store: RunStore; close(): Promise<void> }>
export type Runtime = ReturnType<typeof createTaskRuntime>

export interface StoreFigures {
  noop: number
  threeSteps: number
  p50Ms: number
  /** Events sent per second, each starting one no-op run, from the first send to the last run's end. */
  events: number
  /** p50 from `sendEvent()` to the first line of the run it starts. */
  eventStartMs: number
  /** p50 from `sendEvent()` to the line after the `waitForEvent` of a run suspended on it. */
  eventResumeMs: number
  /** The same, with `CROWD` other runs suspended on a sleep. */
  eventResumeCrowdedMs: number
}

/** What the handler of a run being timed calls on its first line (after its wait, for the waiting tasks). */
let onStart: () => void = () => {}
export const arm = (started: () => void) => {
  onStart = started
}

const routes: RuntimeApiRoute[] = [
  { path: '/api/noop', module: { kind: 'task', POST: () => onStart() } },
  { path: '/api/on-event', module: { route: { kind: 'task', on: 'bench.event' }, POST: () => onStart() } },
  {
    path: '/api/waiter',
    module: {
      kind: 'task',
      POST: async (ctx: TaskContext<{ i: number }>) => {
        await ctx.step.waitForEvent('e', 'bench.resume', { match: { i: ctx.input.i } })
        onStart()
      },
    },
  },
  {
    // Waits for any event of the name its input gives (bench/_event-waits.ts).
    path: '/api/event-waiter',
    module: {
      kind: 'task',
      POST: async (ctx: TaskContext<{ event: string }>) => {
        await ctx.step.waitForEvent('e', ctx.input.event)
        onStart()
      },
    },
  },
  { path: '/api/sleeper', module: { kind: 'task', POST: (ctx: TaskContext) => ctx.step.sleep('nap', 3600) } },
  {
    path: '/api/steps',
    module: {
      kind: 'task',
      POST: async (ctx: TaskContext) => {
        for (const key of ['a', 'b', 'c']) await ctx.step.run(key, () => key)
      },
    },
  },
]

/** `body` on a task runtime over a fresh store made by `open`, closed after. */
export async function withRuntime<T>(open: OpenStore, label: string, body: (rt: Runtime) => Promise<T>): Promise<T> {
  const { store, close } = await open(label)
  const rt = createTaskRuntime({ routes, store, logger: quiet, env: {} })
  try {
    return await body(rt)
  } finally {
    // What is still finishing (a lease let go after a run's end) lands before the store closes.
    await rt.drain(5000)
    await rt.close()
    await close()
  }
}

/** Runs/s of RUNS runs of `task` triggered together, on a fresh store. */
export const svcRate = (open: OpenStore, label: string, task: string) =>
  withRuntime(open, label, (rt) =>
    throughput(RUNS, async () => {
      const run = await rt.trigger(task)
      return () => rt.waitForRun(run.id)
    }),
  )

/** Events/s of `count` events sent together, each starting one no-op run, from the first send to the last run's end. */
export const eventRate = (rt: Runtime, count = RUNS) =>
  throughput(count, async () => {
    const sent = await rt.sendEvent('bench.event')
    return () => rt.waitForRun(sent.runs[0].id)
  })

/** Resolves once `count` runs of `task` are suspended, polling every 20 ms. */
export async function suspended(rt: Runtime, task: string, count: number): Promise<void> {
  const now = async () => (await rt.store.countRunsByTask('suspended')).find((row) => row.taskName === task)?.count ?? 0
  while ((await now()) < count) await new Promise((resolve) => setTimeout(resolve, 20))
}

/** p50 from `trigger()` to a no-op run's first line, on a fresh store. */
export const svcLatency = (open: OpenStore, label = 'latency') =>
  withRuntime(open, label, (rt) =>
    startLatency(
      ROUNDS,
      async () => {
        const run = await rt.trigger('noop')
        return () => rt.waitForRun(run.id)
      },
      arm,
    ),
  )

/** The svc figures on stores made by `open`, a fresh one per measurement; `rates` given, they are not measured again. */
export async function measureSvc(open: OpenStore, rates?: { noop: number; threeSteps: number }): Promise<StoreFigures> {
  await withRuntime(open, 'warm', (rt) =>
    throughput(200, async () => {
      const run = await rt.trigger('steps')
      return () => rt.waitForRun(run.id)
    }),
  )
  const noop = rates?.noop ?? (await svcRate(open, 'noop', 'noop'))
  const threeSteps = rates?.threeSteps ?? (await svcRate(open, 'steps', 'steps'))
  const p50Ms = await svcLatency(open)
  const events = await withRuntime(open, 'events', (rt) => eventRate(rt))
  const eventStartMs = await withRuntime(open, 'event_latency', (rt) =>
    startLatency(
      ROUNDS,
      async () => {
        const sent = await rt.sendEvent('bench.event')
        return () => rt.waitForRun(sent.runs[0].id)
      },
      arm,
    ),
  )
  let i = 0
  const resumeLatency = (rt: Runtime) =>
    startLatency(
      ROUNDS / 2,
      async () => {
        // Suspended on its wait before the clock starts: what is timed is the send and the resumption.
        const run = await rt.trigger('waiter', { i: ++i })
        while ((await rt.getRun(run.id))?.status !== 'suspended') await new Promise((resolve) => setTimeout(resolve, 1))
        return async () => {
          await rt.sendEvent('bench.resume', { i })
          await rt.waitForRun(run.id)
        }
      },
      arm,
      true,
    )
  const eventResumeMs = await withRuntime(open, 'event_resume', resumeLatency)
  const eventResumeCrowdedMs = await withRuntime(open, 'event_resume_crowded', async (rt) => {
    for (let n = 0; n < CROWD; n++) await rt.trigger('sleeper')
    await suspended(rt, 'sleeper', CROWD)
    return resumeLatency(rt)
  })
  return { noop, threeSteps, p50Ms, events, eventStartMs, eventResumeMs, eventResumeCrowdedMs }
}
