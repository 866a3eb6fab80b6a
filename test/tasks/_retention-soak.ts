/**
 * A retention soak: a runtime on `store` whose task keeps its finished runs
 * `retentionSeconds` (each run records one step), triggered `perTick` runs
 * every `tickMs` for `forMs`, while the number of runs the store holds is
 * sampled. Without retention the store would hold every run triggered; with
 * it, about what was triggered within the retention and a round of pruning.
 */
import type { RunStore } from '../../src/runtime/tasks/index.ts'
import { runtime, sleep, task } from './_helpers.ts'

export interface SoakFigures {
  triggered: number
  /**
   * The most runs the store held past what was triggered within `windowMs`
   * before the sample (the retention, a round of pruning every second, and
   * room for a loaded machine): 0 while pruning keeps up.
   */
  excess: number
  /** The runs it held at the end. */
  last: number
}

export async function retentionSoak(
  store: RunStore,
  { retentionSeconds = 1, perTick = 5, tickMs = 100, forMs = 10_000, windowMs = 5000 } = {},
): Promise<SoakFigures> {
  const rt = runtime([task('soak', (ctx) => ctx.step.run('one', () => 'done'), { route: { retention: retentionSeconds } })], { store })
  await rt.recover()
  const statuses = ['scheduled', 'queued', 'running', 'suspended', 'completed', 'failed', 'cancelled'] as const
  const held = async () => (await store.countRunsByTask(statuses)).reduce((sum, { count }) => sum + count, 0)
  const triggers: number[] = []
  let excess = 0
  const end = Date.now() + forMs
  while (Date.now() < end) {
    const at = Date.now()
    await Promise.all(Array.from({ length: perTick }, () => rt.trigger('soak', {})))
    for (let i = 0; i < perTick; i++) triggers.push(at)
    const count = await held()
    const recent = triggers.filter((time) => time >= Date.now() - windowMs).length
    excess = Math.max(excess, count - recent)
    await sleep(tickMs)
  }
  // Stopped before the caller reads the store, so no pruning round runs between its reads.
  await rt.drain(5000)
  await rt.close()
  return { triggered: triggers.length, excess, last: await held() }
}
