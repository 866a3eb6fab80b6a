/**
 * The floor under dispatch growth: the least any in-process dispatcher
 * does per run, with nothing of svc in it. Each run is a record kept in a
 * Map under an id from the engine's generator (the store's part), a promise
 * its dispatch resolves (the waiter's part), and a read of the record back
 * with its end written and a copy handed out (the runner's part). Timed at
 * the sizes the engine is, all at once or through a window of runs in
 * flight, the growth of this loop is what the machine's caches and its
 * garbage collector add as the records outgrow them.
 */
import { newRunId } from '../src/runtime/tasks/base/ids.ts'

/** µs per run for `count` runs, at most `window` in flight at once. */
export async function bareDispatch(count: number, window = count): Promise<number> {
  const records = new Map<string, Record<string, unknown>>()
  const start = performance.now()
  for (let from = 0; from < count; from += window) {
    const pending: Promise<unknown>[] = []
    for (let i = from; i < Math.min(count, from + window); i++) {
      const createdAt = new Date().toISOString()
      const run = { id: newRunId(), taskName: 'noop', status: 'running', trigger: 'manual', ok: true, attempts: [], steps: {}, createdAt }
      records.set(run.id, run)
      pending.push(
        Promise.resolve(run.id).then((id) => {
          const record = records.get(id)!
          record.status = 'completed'
          record.attempts = [{ index: 1, startedAt: createdAt, durationMs: 0 }]
          return { ...record }
        }),
      )
    }
    await Promise.all(pending)
  }
  return ((performance.now() - start) / count) * 1000
}
