/** The in-process scan time of an app, as bench:scan and bench:cli both report it. */
import { scanApp } from '../src/manifest.ts'

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]

/**
 * Scans `root` after warm-up scans (at least two, and for about a second, so
 * that a small app warms the parser and the JIT as a large one does), as many times
 * as fit in about two seconds (at least three, at most nine), and checks that
 * every one of `routes` routes was read without a config error.
 */
export async function measureScan(root: string, routes: number): Promise<{ median: number; min: number }> {
  const warm = performance.now() + 1_000
  for (let i = 0; i < 2 || performance.now() < warm; i++) await scanApp({ root })
  const times: number[] = []
  const deadline = performance.now() + 2_000
  while (times.length < 3 || (times.length < 9 && performance.now() < deadline)) {
    const start = performance.now()
    const result = await scanApp({ root })
    times.push(performance.now() - start)
    if (result.errors.length > 0) throw new Error(`the generated app has config errors:\n${result.errors.map(String).join('\n')}`)
    if (result.routes.length !== routes) throw new Error(`scanned ${result.routes.length} routes, expected ${routes}`)
  }
  return { median: median(times), min: Math.min(...times) }
}
