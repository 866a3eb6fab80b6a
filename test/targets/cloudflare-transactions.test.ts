/**
 * `ctx.step.transaction` in the tasks Durable Object, in real workerd: the
 * step's `tx` runs on the object's own SQL storage, inside the
 * `transactionSync` that records the step. An app built with
 * `svc build --target cloudflare` writes a row and sleeps; a new workerd on
 * the same storage wakes the run by its alarm, the replay returns the
 * recorded output and writes nothing again. A step that throws leaves no
 * row, and an async function gets a clear error.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import type { Miniflare } from 'miniflare'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildApp } from '../../src/build/build.ts'
import type { RunRecord } from '../../src/types.ts'
import { ROOT } from '../docs/_markdown.ts'
import { until } from '../_helpers.ts'
import { startBuiltWorker } from './_wrangler.ts'

const SECRET = 'tx-secret-0123456789abcdef0123456789ab'

const files: Record<string, string> = {
  'package.json': JSON.stringify({ type: 'module', dependencies: { svcjs: '*' } }),
  'src/api/orders/record.ts': `
import type { SqlTransaction, TaskContext } from 'svcjs'
export const route = { kind: 'task' } as const
export async function POST(ctx: TaskContext<{ id: string; fail?: boolean }>) {
  const saved = await ctx.step.transaction('save', (tx: SqlTransaction) => {
    tx.run('CREATE TABLE IF NOT EXISTS items (id TEXT PRIMARY KEY)')
    const { changes } = tx.run('INSERT INTO items (id) VALUES (?)', ctx.input.id)
    if (ctx.input.fail) throw new Error('refused after the insert')
    return { changes, rows: tx.query<{ n: number }>('SELECT count(*) AS n FROM items')[0].n }
  })
  await ctx.step.sleep('pause', 1)
  return saved
}
`,
  'src/api/orders/list.ts': `
import type { SqlTransaction, TaskContext } from 'svcjs'
export const route = { kind: 'task' } as const
export async function POST(ctx: TaskContext) {
  return ctx.step.transaction('read', (tx: SqlTransaction) => {
    tx.run('CREATE TABLE IF NOT EXISTS items (id TEXT PRIMARY KEY)')
    return tx.query<{ id: string }>('SELECT id FROM items ORDER BY id').map((row) => row.id)
  })
}
`,
  'src/api/orders/later.ts': `
import type { SqlTransaction, TaskContext } from 'svcjs'
export const route = { kind: 'task' } as const
export async function POST(ctx: TaskContext) {
  return ctx.step.transaction('save', async (tx: SqlTransaction) => {
    tx.run('CREATE TABLE IF NOT EXISTS items (id TEXT PRIMARY KEY)')
    tx.run('INSERT INTO items (id) VALUES (?)', 'async')
    await null
  })
}
`,
}

let root: string
let out: string
let persist: string
let mf: Miniflare

beforeAll(async () => {
  root = join(ROOT, '.tmp', `tx-cf-app-${process.pid}`)
  for (const [file, contents] of Object.entries(files)) {
    mkdirSync(dirname(join(root, file)), { recursive: true })
    writeFileSync(join(root, file), contents)
  }
  await buildApp({ root, target: 'cloudflare' })
  out = join(root, '.output/cloudflare')
  persist = mkdtempSync(join(tmpdir(), 'svc-cf-tx-'))
  mf = await start()
})
afterAll(async () => {
  await mf?.dispose()
  rmSync(persist, { recursive: true, force: true })
  rmSync(root, { recursive: true, force: true })
})

const start = (): Promise<Miniflare> => startBuiltWorker(out, { SVC_TASK_SECRET: SECRET }, persist)

const auth = { authorization: `Bearer ${SECRET}` }

async function trigger(task: string, input: unknown = {}): Promise<string> {
  const res = await mf.dispatchFetch(`http://worker/__tasks/${task}`, {
    method: 'POST',
    headers: { ...auth, 'content-type': 'application/json' },
    body: JSON.stringify(input),
  })
  expect(res.status).toBe(202)
  return ((await res.json()) as { id: string }).id
}

async function run(id: string): Promise<RunRecord> {
  return (await (await mf.dispatchFetch(`http://worker/__tasks/${id}`, { headers: auth })).json()) as RunRecord
}

const ended = (id: string) =>
  until(async () => {
    const record = await run(id)
    return record.status === 'completed' || record.status === 'failed' ? record : undefined
  }, 15_000)

describe('transactional steps in the tasks Durable Object', () => {
  it("commit the app's row with the step; the replay after a restart writes nothing again; a failure leaves no row", async () => {
    const id = await trigger('orders.record', { id: 'a' })
    await until(async () => (await run(id)).status === 'suspended', 15_000)
    // A new workerd on the same storage: the alarm wakes the run, which replays the step.
    await mf.dispose()
    mf = await start()
    const done = await ended(id)
    expect(done).toMatchObject({ status: 'completed', result: { changes: 1, rows: 1 } })
    expect(done.steps.save).toMatchObject({ kind: 'transaction', output: { changes: 1, rows: 1 } })

    const failed = await ended(await trigger('orders.record', { id: 'b', fail: true }))
    expect(failed.status).toBe('failed')
    expect(failed.attempts[0].error).toBe('refused after the insert')

    const later = await ended(await trigger('orders.later'))
    expect(later.status).toBe('failed')
    expect(later.attempts[0].error).toMatch(/on a Durable Object the step's function must be synchronous/)

    const listed = await ended(await trigger('orders.list'))
    expect(listed).toMatchObject({ status: 'completed', result: ['a'] })

    // A batch from the worker is one call to the object, which records its runs in one transaction.
    const res = await mf.dispatchFetch('http://worker/__tasks/orders.record/batch', {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify([{ id: 'c' }, { id: 'd' }]),
    })
    expect(res.status).toBe(202)
    const { runs } = (await res.json()) as { runs: { ok: boolean; id: string }[] }
    expect(runs.map((run) => run.ok)).toEqual([true, true])
    for (const run of runs) expect(await ended(run.id)).toMatchObject({ status: 'completed', result: { changes: 1 } })
  })
})
