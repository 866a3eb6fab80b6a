/**
 * Scan benchmark (`npm run bench:scan`): writes realistic route trees of
 * 100, 1,000 and 5,000 files into temporary apps and times `scanApp` in
 * this process (median of several scans after a warm-up), with its cost per
 * route at each size. Goals on a 2-core machine: 1,000 routes in 200 ms, and
 * the cost per route at 5,000 at most 1.5 × that at 100 (a scan grows
 * linearly). `npm run bench:cli` times the same scans as `svc routes inspect`.
 */
import { rmSync } from 'node:fs'
import { measureScan } from './_scan-measure.ts'
import { writeGeneratedApp } from './_routes.ts'

const SIZES = [100, 1_000, 5_000]
const GOAL_1K_MS = 200
const GROWTH_GOAL = 1.5

const ms = (value: number) => `${value.toFixed(1)} ms`

console.log(`scanApp() in process, Node ${process.version}, median of several scans after a warm-up\n`)
console.log(
  `${'routes'.padStart(6)}  ${'source'.padStart(9)}  ${'median'.padStart(10)}  ${'min'.padStart(10)}  ${'per route'.padStart(10)}`,
)
const perRoute: number[] = []
for (const size of SIZES) {
  const { root, bytes } = writeGeneratedApp(size)
  try {
    const { median, min } = await measureScan(root, size)
    perRoute.push(median / size)
    const goal = size === 1_000 ? `   goal ${GOAL_1K_MS} ms ${median <= GOAL_1K_MS ? 'ok' : 'OVER'}` : ''
    console.log(
      `${String(size).padStart(6)}  ${`${(bytes / 1024).toFixed(0)} KiB`.padStart(9)}  ${ms(median).padStart(10)}  ${ms(min).padStart(10)}  ${`${((median / size) * 1000).toFixed(0)} µs`.padStart(10)}${goal}`,
    )
  } finally {
    rmSync(root, { recursive: true, force: true })
  }
}
const growth = perRoute[perRoute.length - 1] / perRoute[0]
console.log(
  `\ncost per route, ${SIZES[SIZES.length - 1]} / ${SIZES[0]} routes: ${growth.toFixed(2)} x   goal <= ${GROWTH_GOAL} x ${growth <= GROWTH_GOAL ? 'ok' : 'OVER'}`,
)
