/**
 * Flow limits across three real server processes on one shared store
 * (docs/flow-control.md "One rule on every store": each store takes a slot
 * in one atomic step, so processes sharing a database never exceed a limit
 * together). Every
 * store that several processes may share runs it, with servers of
 * `test/fixtures/postgres-cluster/_flow-tasks.ts`. Each attempt logs its
 * start and end, and the log orders them as they happened, whichever
 * process ran them: an attempt logs its start only once its run holds a
 * slot, and its end before it gives the slot back.
 */
import { describe, expect, it } from 'vitest'
import type { RunStore } from '../../src/runtime/tasks/index.ts'
import type { ChildServer } from '../postgres/_child.ts'
import { until } from './_helpers.ts'

export interface AttemptEvent {
  run_id: string
  key: string
  event: string
}

export interface FlowCluster {
  /** Three servers on the store. */
  servers: ChildServer[]
  /** A connection of the test's own to the store. */
  store: Pick<RunStore, 'getRun' | 'listRuns'>
  /** The logged starts and ends of these runs' attempts, in the order they happened. */
  events(ids: string[]): AttemptEvent[] | Promise<AttemptEvent[]>
}

// Generous for two shared cores; only a hang reaches it.
const SETTLE_MS = 30_000

/** Waits until `count` runs of `task` completed; names the statuses it saw when they do not. */
export async function allCompleted(store: FlowCluster['store'], task: string, count: number): Promise<void> {
  try {
    await until(async () => (await store.listRuns({ taskName: task, status: 'completed' })).length === count, SETTLE_MS)
  } catch {
    const tally = new Map<string, number>()
    for (const run of await store.listRuns({ taskName: task })) tally.set(run.status, (tally.get(run.status) ?? 0) + 1)
    const seen = [...tally].map(([status, n]) => `${n} ${status}`).join(', ') || 'none'
    throw new Error(`${count} runs of "${task}" did not all complete within ${SETTLE_MS} ms; their statuses: ${seen}`)
  }
}

/** How many attempts each run started. */
function startsPerRun(events: AttemptEvent[]): Map<string, number> {
  const starts = new Map<string, number>()
  for (const { run_id, event } of events) if (event === 'start') starts.set(run_id, (starts.get(run_id) ?? 0) + 1)
  return starts
}

/**
 * The most attempts open at once, in all and per key, from their `start` and `end` events in
 * the order they happened.
 */
function mostOpen(events: readonly { key: string; event: string }[]): { all: number; perKey: Map<string, number> } {
  let open = 0
  let all = 0
  const openByKey = new Map<string, number>()
  const perKey = new Map<string, number>()
  for (const { key, event } of events) {
    const delta = event === 'start' ? 1 : -1
    open += delta
    all = Math.max(all, open)
    const n = (openByKey.get(key) ?? 0) + delta
    openByKey.set(key, n)
    perKey.set(key, Math.max(perKey.get(key) ?? 0, n))
  }
  return { all, perKey }
}

export function flowProcessesContract(name: string, cluster: () => Promise<FlowCluster>): void {
  describe(`flow control across processes on ${name}`, { timeout: 60_000 }, () => {
    it('60 runs with concurrency 2, triggered on three processes, each start once and never have more than 2 attempts open', async () => {
      const { servers, store, events } = await cluster()
      const ids = await Promise.all(
        Array.from({ length: 60 }, (_, n) => servers[n % 3].call<string>('trigger', { task: 'limited', payload: { n } })),
      )
      expect(new Set(ids).size).toBe(60)
      await allCompleted(store, 'limited', 60)
      const log = await events(ids)
      // The three processes raced to start them as they were triggered.
      expect(mostOpen(log).all).toBe(2)
      expect(startsPerRun(log)).toEqual(new Map(ids.map((id) => [id, 1])))
    })

    it('keyed concurrency across processes runs one attempt per key at once', async () => {
      const { servers, store, events } = await cluster()
      const ids = await Promise.all(
        Array.from({ length: 30 }, (_, n) =>
          servers[n % 3].call<string>('trigger', { task: 'keyed', payload: { user: ['a', 'b', 'c'][n % 3 === 0 ? 0 : n % 2 ? 1 : 2], n } }),
        ),
      )
      await allCompleted(store, 'keyed', 30)
      const log = await events(ids)
      expect(mostOpen(log).perKey).toEqual(
        new Map([
          ['a', 1],
          ['b', 1],
          ['c', 1],
        ]),
      )
      expect(startsPerRun(log)).toEqual(new Map(ids.map((id) => [id, 1])))
    })

    it('a rate limit of 3 starts per second holds for runs triggered on three processes', async () => {
      const { servers, store } = await cluster()
      const ids = await Promise.all(
        Array.from({ length: 9 }, (_, n) => servers[n % 3].call<string>('trigger', { task: 'rated', payload: { n } })),
      )
      await allCompleted(store, 'rated', 9)
      const runs = await Promise.all(ids.map((id) => store.getRun(id)))
      const starts = runs.map((run) => Date.parse(run!.startedAt!)).sort((a, b) => a - b)
      // A sliding window: any 4 starts in a row span at least the period.
      for (let i = 3; i < starts.length; i++) expect(starts[i] - starts[i - 3]).toBeGreaterThanOrEqual(1000)
    })

    it('debounced triggers for one key on three processes become one run with the last input', async () => {
      const { servers, store, events } = await cluster()
      const ids: string[] = []
      for (let n = 1; n <= 9; n++) ids.push(await servers[n % 3].call<string>('trigger', { task: 'digest', payload: { user: 'z', n } }))
      expect(new Set(ids).size).toBe(1)
      await allCompleted(store, 'digest', 1)
      expect((await store.getRun(ids[0]))?.result).toMatchObject({ n: 9 })
      expect(startsPerRun(await events(ids))).toEqual(new Map([[ids[0], 1]]))
    })
  })
}
