/**
 * Recording a run's steps, one after another, as the run's step count
 * grows: one run whose handler awaits `ctx.step.run` `steps` times, on a
 * store. A durable store commits each step before the next one starts, so
 * on SQLite a step costs about one commit (an fsync); what must not happen
 * is a step costing more the more steps its run already has.
 */
import { createTaskRuntime } from '../src/runtime/tasks/index.ts'
import type { RunStore } from '../src/runtime/tasks/store/store.ts'
import type { Logger, TaskContext } from '../src/types.ts'

const quiet: Logger = { info() {}, warn() {}, error: (...args) => console.error(...args) }

/** Milliseconds per step for one run of `steps` recorded steps on `store`. */
export async function recordSteps(store: RunStore, steps: number): Promise<number> {
  const rt = createTaskRuntime({
    routes: [
      {
        path: '/api/many',
        module: {
          kind: 'task',
          POST: async (ctx: TaskContext<unknown>) => {
            for (let i = 0; i < steps; i++) await ctx.step.run(`step-${i}`, () => ({ i, note: 'a small output' }))
          },
        },
      },
    ],
    store,
    logger: quiet,
    env: {},
  })
  try {
    const start = performance.now()
    const run = await rt.trigger('many')
    const done = await rt.waitForRun(run.id)
    if (done.status !== 'completed') throw new Error(`the run of ${steps} steps ended ${done.status}`)
    return (performance.now() - start) / steps
  } finally {
    await rt.close()
  }
}
