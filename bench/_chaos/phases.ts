/**
 * What both sides of the chaos harness do alike, svc's (scenarios.ts) and
 * pg-boss's (pgboss-side.ts): sending a scenario's work spread over a
 * phase, and waiting for it to end, then counting how it ended.
 */
import type { ChaosCounts } from './scenarios.ts'

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** The states a run or job ends in. */
const FINISHED = ['completed', 'failed', 'cancelled']

/**
 * Calls `send(i)` for `count` items spread evenly over `overMs` (all at
 * once for 0), without waiting for one before the next is due; resolves to
 * the ids the accepted ones got.
 */
export async function spread(count: number, overMs: number, send: (i: number) => Promise<string | undefined>): Promise<string[]> {
  const gap = overMs / count
  const calls: Promise<string | undefined>[] = []
  const began = Date.now()
  for (let i = 0; i < count; i++) {
    const due = began + i * gap
    if (due > Date.now()) await sleep(due - Date.now())
    calls.push(send(i))
  }
  return (await Promise.all(calls)).filter((id): id is string => id !== undefined)
}

/**
 * Reads the runs (or jobs) with `read` every 200 ms until every one of
 * `ids` has finished, or `ms` passed; resolves to the last read and the
 * counts of how `ids` ended, their effects counted by `again`.
 */
export async function settle<T>(
  ids: string[],
  ms: number,
  read: () => Promise<Map<string, T>>,
  state: (item: T) => string,
  again: (items: Map<string, T>) => Pick<ChaosCounts, 'stepsRunAgain' | 'attemptsRunTwice'>,
): Promise<ChaosCounts> {
  const until = Date.now() + ms
  const ended = (items: Map<string, T>, id: string) => {
    const item = items.get(id)
    return item === undefined ? '' : state(item)
  }
  let items = await read()
  while (Date.now() < until && ids.some((id) => !FINISHED.includes(ended(items, id)))) {
    await sleep(200)
    items = await read()
  }
  return {
    accepted: ids.length,
    lost: ids.filter((id) => ended(items, id) !== 'completed' && ended(items, id) !== 'failed').length,
    failed: ids.filter((id) => ended(items, id) === 'failed').length,
    ...again(items),
  }
}
