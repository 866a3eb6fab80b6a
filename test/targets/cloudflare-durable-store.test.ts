/**
 * The RunStore contracts (runs, flow control, events), run against
 * `DurableObjectRunStore` on a real SQLite-backed Durable Object in workerd.
 * A small worker bundles the store and hands each call to one object per
 * store; the suite's store calls it over Miniflare, with errors rebuilt as
 * the worker's own rpc rebuilds them.
 */
import { randomUUID } from 'node:crypto'
import { fileURLToPath } from 'node:url'
import { Miniflare } from 'miniflare'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { bundle } from '../../src/build/bundle.ts'
import { callObject } from '../../src/cloudflare/rpc.ts'
import type { RunStore } from '../../src/runtime/tasks/index.ts'
import { StoreFullError } from '../../src/runtime/errors.ts'
import type { RunRecord } from '../../src/types.ts'
import { eventStoreContract } from '../tasks/event-store-contract.ts'
import { flowStoreContract } from '../tasks/flow-store-contract.ts'
import { makeRun, runStoreContract } from '../tasks/store-contract.ts'
import { EVENTS_TABLE } from '../../src/runtime/tasks/sql/events.ts'
import { createTables } from '../../src/runtime/tasks/sql/schema.ts'

const source = (file: string) => JSON.stringify(fileURLToPath(new URL(`../../src/cloudflare/${file}`, import.meta.url)))

const BRIDGE = `
import { DurableObjectRunStore } from ${source('sql-store.ts')}
import { answer, callArgs } from ${source('rpc.ts')}
export class StoreBridge {
  constructor(state) { this.state = state }
  async fetch(request) {
    const maxRuns = new URL(request.url).searchParams.get('maxRuns')
    try {
      // The object's tables as the file holds them, read or written around the store (tests only).
      if (request.headers.get('x-raw-sql') !== null) {
        const [query, ...params] = callArgs(await request.json())
        return answer({ value: this.state.storage.sql.exec(query, ...params).toArray() })
      }
      this.store ??= new DurableObjectRunStore(this.state.storage, maxRuns === null ? {} : { maxRuns: Number(maxRuns) })
      const call = await request.json()
      const args = callArgs(call)
      // A patch key set to undefined (remove the field) does not survive JSON: its name travels beside it.
      if (call.method === 'updateRun') for (const key of args.pop()) args[1][key] = undefined
      const value = await this.store[call.method](...args)
      // A batch's StoreFullError answers do not survive JSON: each travels as its bound.
      if (call.method === 'createRuns') return answer({ value: value.map((item) => (item instanceof Error ? { storeFull: item.maxRuns } : item)) })
      return answer({ value })
    } catch (error) {
      return answer({ error })
    }
  }
}
export default {
  fetch(request, env) {
    return env.BRIDGE.get(env.BRIDGE.idFromName(new URL(request.url).pathname)).fetch(request)
  },
}
`

let mf: Miniflare

beforeAll(async () => {
  const { code } = await bundle({ input: '/virtual/store-bridge.mjs', entrySource: BRIDGE, platform: 'worker', minify: false })
  mf = new Miniflare({
    modules: [{ type: 'ESModule', path: '/worker.mjs', contents: code }],
    modulesRoot: '/',
    compatibilityDate: '2025-09-01',
    durableObjects: { BRIDGE: { className: 'StoreBridge', useSQLite: true } },
  })
  await mf.ready
})
afterAll(() => mf?.dispose())

/** A store in a fresh object of its own; every method is a call to it. */
function bridgeStore(options?: { maxRuns: number }): RunStore {
  return bridge(options).store
}

/** `bridgeStore`, and `sql` to run a statement on the object's tables beside it. */
function bridge(options?: { maxRuns: number }): {
  store: RunStore
  sql: (query: string, ...params: unknown[]) => Promise<Record<string, unknown>[]>
} {
  const url = `http://bridge/${randomUUID()}${options ? `?maxRuns=${options.maxRuns}` : ''}`
  const stubOf = (headers: Record<string, string> = {}) => ({
    async fetch(request: Request): Promise<Response> {
      const res = await mf.dispatchFetch(url, {
        method: 'POST',
        headers: [...request.headers, ...Object.entries(headers)],
        body: await request.text(),
      })
      return new Response(await res.text(), { status: res.status, headers: [...res.headers] })
    },
  })
  const stub = stubOf()
  const raw = stubOf({ 'x-raw-sql': '1' })
  const sql = (query: string, ...params: unknown[]) => callObject(raw, 'sql', [query, ...params]) as Promise<Record<string, unknown>[]>
  const call =
    (method: string) =>
    (...args: unknown[]) => {
      if (method === 'updateRun') {
        const [id, patch, expect] = args as [string, Record<string, unknown>, unknown]
        args = [id, patch, expect, Object.keys(patch).filter((key) => patch[key] === undefined)]
      }
      const answered = callObject(stub, method, args)
      if (method !== 'createRuns') return answered
      return answered.then((items) =>
        (items as ({ storeFull: number } | RunRecord)[]).map((item) =>
          'storeFull' in item ? new StoreFullError('DurableObjectRunStore', item.storeFull) : item,
        ),
      )
    }
  const methods = [
    'createRun',
    'createRuns',
    'getRun',
    'updateRun',
    'appendAttempt',
    'saveStep',
    'listRuns',
    'pruneFinished',
    'countRunsByTask',
    'saveTimer',
    'takeTimer',
    'listTimers',
    'dropTimersOf',
    'putToken',
    'getToken',
    'settleToken',
    'startQueued',
    'debounceRun',
    'putEvent',
    'eventsSince',
    'listEvents',
    'noteEventEffects',
    'putSchedule',
    'getSchedule',
    'listSchedules',
    'deleteSchedule',
    'putSignal',
    'takeSignal',
    'listSignals',
    'putUpdate',
    'answerUpdate',
    'getUpdate',
    'listUpdates',
  ]
  return { store: Object.fromEntries([['durable', true], ...methods.map((method) => [method, call(method)])]) as RunStore, sql }
}

runStoreContract('DurableObjectRunStore (a SQLite Durable Object in workerd)', (options) => bridgeStore(options))
flowStoreContract('DurableObjectRunStore (a SQLite Durable Object in workerd)', () => bridgeStore())
// Each store's raw SQL, to record tens of thousands of events in one statement.
const rawSql = new WeakMap<RunStore, ReturnType<typeof bridge>['sql']>()
eventStoreContract(
  'DurableObjectRunStore (a SQLite Durable Object in workerd)',
  () => {
    const { store, sql } = bridge()
    rawSql.set(store, sql)
    return store
  },
  {
    async putEvents(store, events) {
      // A call of the store first: the object makes its tables as it wakes for one.
      await store.listEvents!({ limit: 1 })
      // A statement's parameter holds at most about a megabyte here (SQLITE_TOOBIG past it).
      for (let i = 0; i < events.length; i += 2000) {
        await rawSql.get(store)!(
          `INSERT INTO svc_events (id, name, time, record)
            SELECT json_extract(value, '$.id'), json_extract(value, '$.name'), json_extract(value, '$.time'), value FROM json_each(?)`,
          JSON.stringify(events.slice(i, i + 2000)),
        )
      }
    },
  },
)

describe('DurableObjectRunStore steps', () => {
  it("keeps each step in a row of its own, not in its run's record, and puts them back in order", async () => {
    const { store, sql } = bridge()
    const run = await store.createRun(makeRun({ steps: { first: { status: 'completed', output: 0 } } }))
    await store.saveStep(run.id, 'b', { status: 'completed', output: 1 })
    await store.saveStep(run.id, 'a', { status: 'timed_out' })
    await store.saveStep(run.id, 'b', { status: 'completed', output: 2 })
    const steps = { first: { status: 'completed', output: 0 }, b: { status: 'completed', output: 2 }, a: { status: 'timed_out' } }
    expect(Object.entries((await store.getRun(run.id))!.steps)).toEqual(Object.entries(steps))
    const ended = await store.updateRun(run.id, { status: 'completed' })
    expect(Object.entries(ended!.steps)).toEqual(Object.entries(steps))
    const [row] = await sql('SELECT record FROM svc_runs')
    expect(JSON.parse(row.record as string).steps).toEqual({})
    expect((await sql('SELECT key FROM svc_steps ORDER BY seq')).map((r) => r.key)).toEqual(['first', 'b', 'a'])
  })

  it('moves the steps of an object that held runs before steps had a table of their own', async () => {
    const { store, sql } = bridge()
    const run = makeRun({ status: 'suspended', steps: { z: { status: 'completed', output: 'é' }, a: { status: 'timed_out' } } })
    for (const statement of createTables({ timerDueAt: true })
      .split(';')
      .filter((text) => text.trim()))
      await sql(statement)
    await sql(
      'INSERT INTO svc_runs (id, task_name, status, record) VALUES (?, ?, ?, ?)',
      run.id,
      run.taskName,
      run.status,
      JSON.stringify(run),
    )
    const read = (await store.getRun(run.id))!
    expect(read).toEqual(run)
    expect(Object.keys(read.steps)).toEqual(['z', 'a'])
    const [row] = await sql('SELECT record FROM svc_runs')
    expect(JSON.parse(row.record as string).steps).toEqual({})
    expect((await sql('SELECT key FROM svc_steps ORDER BY seq')).map((r) => r.key)).toEqual(['z', 'a'])
  })
})

describe("DurableObjectRunStore's table names", () => {
  it("renames an earlier release's plainly named tables in place, with their indexes, and leaves the app's own", async () => {
    const { store, sql } = bridge()
    const plain = (createTables({ timerDueAt: true }) + EVENTS_TABLE).replaceAll('svc_', '')
    for (const statement of plain.split(';').filter((text) => text.trim())) await sql(statement)
    await sql('CREATE TABLE items (id TEXT PRIMARY KEY)')
    const run = makeRun({ status: 'suspended' })
    await sql('INSERT INTO runs (id, task_name, status, record) VALUES (?, ?, ?, ?)', run.id, run.taskName, run.status, JSON.stringify(run))
    const event = { id: 'e', name: 'order.paid', time: new Date().toISOString() }
    await sql('INSERT INTO events (id, name, time, record) VALUES (?, ?, ?, ?)', event.id, event.name, event.time, JSON.stringify(event))
    expect(await store.getRun(run.id)).toEqual(run)
    expect((await store.listEvents!({ limit: 10 })).events.map((held) => held.id)).toEqual(['e'])
    const names = (
      await sql("SELECT name FROM sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE '\\_%' ESCAPE '\\' ORDER BY name")
    ).map((row) => row.name as string)
    expect(names.filter((name) => !name.startsWith('svc_'))).toEqual(['items'])
    expect(names).toEqual(
      expect.arrayContaining(['svc_runs', 'svc_runs_by_key', 'svc_events', 'svc_events_by_name', 'svc_steps', 'svc_tokens']),
    )
  })
})

describe('DurableObjectRunStore events', () => {
  it('an object that held runs before events had a table gains it when it next wakes', async () => {
    const { store, sql } = bridge()
    for (const statement of createTables({ timerDueAt: true })
      .split(';')
      .filter((text) => text.trim()))
      await sql(statement)
    const event = { id: 'e', name: 'order.paid', time: new Date().toISOString() }
    expect(await store.putEvent!(event)).toEqual({ event, created: true })
    expect(await sql('SELECT id, name, time FROM svc_events')).toEqual([event])
  })
})
