/**
 * `DurableObjectRunStore` at its bound, in a real SQLite-backed Durable
 * Object in workerd (Miniflare): the object's time per run for a run's own
 * writes (created queued, then ended) once `retained` finished runs fill the
 * store, so each run that ends evicts the oldest. Timed from outside the
 * object, one request per batch of runs: workerd's clock only moves across
 * I/O, so the object cannot time itself.
 */
import { fileURLToPath } from 'node:url'
import { Miniflare } from 'miniflare'
import { bundle } from '../src/build/bundle.ts'
import { newRunId } from '../src/runtime/tasks/base/ids.ts'

const storeModule = JSON.stringify(fileURLToPath(new URL('../src/cloudflare/sql-store.ts', import.meta.url)))

// `fill` writes finished runs straight into the store's table with SQL (the
// store's own writes would take minutes for 100,000 runs through one
// request each); `runs` creates and ends runs through the store.
const WORKER = `
import { DurableObjectRunStore } from ${storeModule}
const record = (id, status, now) => ({ id, taskName: 'noop', status, trigger: 'manual', input: {}, ok: status === 'completed', attempts: [], steps: {}, createdAt: now })
export class Bench {
  constructor(state) { this.state = state }
  async fetch(request) {
    const { ids, retained } = await request.json()
    this.store ??= new DurableObjectRunStore(this.state.storage, { maxRuns: retained })
    const now = new Date().toISOString()
    if (new URL(request.url).pathname.endsWith('/fill')) {
      // Finished runs take eviction positions 1, 2, 3… in the order written.
      let [{ n }] = this.state.storage.sql.exec('SELECT count(*) AS n FROM svc_runs').toArray()
      for (const id of ids) {
        this.state.storage.sql.exec(
          "INSERT INTO svc_runs (id, task_name, status, idempotency_key, finished_seq, record) VALUES (?, 'noop', 'completed', NULL, ?, ?)",
          id, ++n, JSON.stringify(record(id, 'completed', now)),
        )
      }
    } else {
      for (const id of ids) {
        await this.store.createRun(record(id, 'queued', now))
        await this.store.updateRun(id, { status: 'completed', ok: true, finishedAt: now, attempt: { index: 1, startedAt: now, durationMs: 0 } })
      }
    }
    return new Response('ok')
  }
}
export default {
  fetch(request, env) {
    return env.BENCH.get(env.BENCH.idFromName(new URL(request.url).pathname.split('/')[1])).fetch(request)
  },
}
`

const BATCH = 2_000
const FILL_CHUNK = 10_000

/** Median µs of object time per run, over `rounds` fresh objects, for each size of retained runs. */
export async function durableStoreAtBound(sizes: number[], rounds = 3): Promise<number[]> {
  const { code } = await bundle({ input: '/virtual/durable-store-bench.mjs', entrySource: WORKER, platform: 'worker', minify: false })
  const mf = new Miniflare({
    modules: [{ type: 'ESModule', path: '/worker.mjs', contents: code }],
    modulesRoot: '/',
    compatibilityDate: '2025-09-01',
    durableObjects: { BENCH: { className: 'Bench', useSQLite: true } },
  })
  const post = async (path: string, ids: string[], retained: number) => {
    const res = await mf.dispatchFetch(`http://bench/${path}`, { method: 'POST', body: JSON.stringify({ ids, retained }) })
    if (!res.ok) throw new Error(`the benchmark object answered ${res.status}: ${await res.text()}`)
    await res.text()
  }
  const ids = (count: number) => Array.from({ length: count }, () => newRunId())
  try {
    await mf.ready
    const perRun: number[] = []
    for (const retained of sizes) {
      const times: number[] = []
      for (let round = 0; round < rounds; round++) {
        const object = `store-${retained}-${round}`
        for (let from = 0; from < retained; from += FILL_CHUNK) {
          await post(`${object}/fill`, ids(Math.min(FILL_CHUNK, retained - from)), retained)
        }
        await post(`${object}/runs`, ids(BATCH), retained) // warm-up, at the bound from here on
        const start = performance.now()
        await post(`${object}/runs`, ids(BATCH), retained)
        times.push(((performance.now() - start) / BATCH) * 1000)
      }
      perRun.push(times.sort((a, b) => a - b)[Math.floor(times.length / 2)])
    }
    return perRun
  } finally {
    await mf.dispose()
  }
}
