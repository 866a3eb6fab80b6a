/**
 * A retention soak: a runtime on `store` whose task keeps its finished runs
 * `retentionSeconds` (each run records one step), triggered `perTick` runs every `tickMs` for `forMs`,
 * while the number of runs the store holds is sampled. Without retention
 * the store would hold every run triggered; with it, about what was
 * triggered within the retention and one round of pruning.
 */
import type { RunStore } from '../../src/runtime/tasks/index.ts'
import { runtime, sleep, task } from './_helpers.ts'

export interface SoakFigures {
  triggered: number
  /** The most runs the store held at a sample. */
  most: number
  /** The runs it held at the end. */
  last: number
  /** How many runs were triggered per second. */
  perSecond: number
}

export async function retentionSoak(
  store: RunStore,
  { retentionSeconds = 1, perTick = 10, tickMs = 100, forMs = 6000 } = {},
): Promise<SoakFigures> {
  const rt = runtime([task('soak', (ctx) => ctx.step.run('one', () => 'done'), { route: { retention: retentionSeconds } })], { store })
  await rt.recover()
  const held = async () =>
    (await store.countRunsByTask(['scheduled', 'queued', 'running', 'suspended', 'completed', 'failed', 'cancelled'])).reduce(
      (sum, { count }) => sum + count,
      0,
    )
  let triggered = 0
  let most = 0
  const end = Date.now() + forMs
  while (Date.now() < end) {
    await Promise.all(Array.from({ length: perTick }, () => rt.trigger('soak', {})))
    triggered += perTick
    most = Math.max(most, await held())
    await sleep(tickMs)
  }
  return { triggered, most, last: await held(), perSecond: (perTick * 1000) / tickMs }
}
