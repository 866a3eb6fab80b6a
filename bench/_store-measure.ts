/** What bench/store.ts measures, for svc and for each anchor alike. */

export const percentile = (values: number[], p: number): number => [...values].sort((a, b) => a - b)[Math.floor(values.length * p)]

/** `Promise.withResolvers()`, which the project's TypeScript lib (ES2022) does not declare. */
export function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void
  const promise = new Promise<T>((done) => {
    resolve = done
  })
  return { promise, resolve }
}

/** Runs per second of `count` items started together, from the first start to the last finish. */
export async function throughput(count: number, start: (i: number) => Promise<() => Promise<unknown>>): Promise<number> {
  const t0 = performance.now()
  const waits = await Promise.all(Array.from({ length: count }, (_, i) => start(i)))
  await Promise.all(waits.map((wait) => wait()))
  return (count / (performance.now() - t0)) * 1000
}

/**
 * p50 of `rounds` one-at-a-time latencies from `trigger()` to the handler's
 * first line, which calls `started()`. One item is in flight at a time, and
 * each is waited on to its end (untimed) before the next, so what is
 * measured is the path from enqueue to start, not a queue. The first tenth
 * of the rounds is a warm-up.
 */
export async function startLatency(
  rounds: number,
  trigger: () => Promise<() => Promise<unknown>>,
  arm: (started: () => void) => void,
  /** `trigger` only prepares, untimed; the clock starts when the function it returns is called, which does the timed part and finishes the item. */
  prepared = false,
): Promise<number> {
  const samples: number[] = []
  for (let i = 0; i < rounds; i++) {
    const { promise, resolve } = deferred<number>()
    if (prepared) {
      const act = await trigger()
      arm(() => resolve(performance.now()))
      const t0 = performance.now()
      const finished = act()
      samples.push((await promise) - t0)
      await finished
      continue
    }
    arm(() => resolve(performance.now()))
    const t0 = performance.now()
    const finished = await trigger()
    samples.push((await promise) - t0)
    await finished()
  }
  return percentile(samples.slice(Math.floor(rounds / 10)), 0.5)
}
