/**
 * Batch triggers on a durable store, for bench/store.ts: `BATCH_RUNS` runs
 * started by one `triggerMany`, against the same runs started by
 * `trigger()` one at a time, each awaited (each its own commit), from the
 * first call to the last run recorded. The runs are delayed an hour, so the
 * figure is recording them, not running them.
 */
import { createTaskRuntime } from '../src/runtime/tasks/index.ts'
import type { RunStore } from '../src/runtime/tasks/store/store.ts'
import type { Logger } from '../src/types.ts'
import { percentile } from './_store-measure.ts'

export const BATCH_RUNS = 10_000

const quiet: Logger = { info() {}, warn() {}, error: (...args) => console.error(...args) }

export interface BatchFigures {
  /** Runs/s recorded by `trigger()`, one at a time. */
  oneByOne: number
  /** Runs/s recorded by one `triggerMany`. */
  batched: number
  /** Median of the rounds' ratios, one at a time ÷ batched, in time. */
  ratio: number
}

/** Medians of `rounds` rounds in alternating order, each on a fresh store made by `open`. */
export async function measureTriggerBatch(
  open: () => Promise<{ store: RunStore; close(): Promise<void> }>,
  rounds = 3,
): Promise<BatchFigures> {
  const round = async (kind: 'one by one' | 'triggerMany', count = BATCH_RUNS): Promise<number> => {
    const { store, close } = await open()
    const rt = createTaskRuntime({
      routes: [{ path: '/api/noop', module: { kind: 'task', POST: () => {} } }],
      store,
      logger: quiet,
      env: {},
    })
    const payloads = Array.from({ length: count }, (_, n) => ({ n }))
    const options = { delaySeconds: 3600 }
    try {
      const start = performance.now()
      if (kind === 'triggerMany') {
        const items = await rt.triggerMany('noop', payloads, options)
        if (items.some((item) => !item.ok)) throw new Error('bench:store batch: a run of the batch did not start')
      } else {
        for (const payload of payloads) await rt.trigger('noop', payload, options)
      }
      return performance.now() - start
    } finally {
      await rt.close()
      await close()
    }
  }
  // Warm-up, smaller: the statements prepared and the code optimized.
  await round('triggerMany', 1000)
  await round('one by one', 1000)
  const single: number[] = []
  const many: number[] = []
  const ratios: number[] = []
  for (let i = 0; i < rounds; i++) {
    // In alternating order, so that neither always runs on what the other left.
    const first = i % 2 === 0 ? 'triggerMany' : 'one by one'
    const a = await round(first)
    const b = await round(first === 'triggerMany' ? 'one by one' : 'triggerMany')
    const [batched, alone] = first === 'triggerMany' ? [a, b] : [b, a]
    many.push(batched)
    single.push(alone)
    ratios.push(alone / batched)
  }
  const rate = (ms: number) => (BATCH_RUNS / ms) * 1000
  return { oneByOne: rate(percentile(single, 0.5)), batched: rate(percentile(many, 0.5)), ratio: percentile(ratios, 0.5) }
}
