// triggerMany on PostgresRunStore: a batch recorded in one transaction, its
// statements pipelined on one connection, each answering as createRun's.
import { afterEach, beforeAll, expect, it } from 'vitest'
import { PostgresRunStore } from '../../src/postgres.ts'
import type { BatchItem } from '../../src/types.ts'
import { finished, runtime, task } from '../tasks/_helpers.ts'
import { createDatabase } from './_pg.ts'

let url: string
beforeAll(async () => {
  url = await createDatabase('batch')
})
const open: PostgresRunStore[] = []
afterEach(async () => {
  await Promise.all(open.splice(0).map((s) => s.close()))
})
let schemas = 0
function store(options: { maxRuns?: number } = {}): PostgresRunStore {
  const s = new PostgresRunStore({ url, schema: `batch${++schemas}`, ...options })
  open.push(s)
  return s
}

const double = task('math.double', (ctx) => (ctx.input as { n: number }).n * 2)
const ids = (items: BatchItem[]) => items.map((item) => (item.ok ? item.id : item.code))

it('starts 500 runs of one batch, each once; the same batch sent again with its key starts nothing more', async () => {
  const rt = runtime([double], { store: store() })
  const payloads = Array.from({ length: 500 }, (_, n) => ({ n }))
  const items = await rt.triggerMany('math.double', payloads, { idempotencyKey: 'nightly' })
  expect(items.every((item) => item.ok)).toBe(true)
  const runs = await Promise.all(items.map((item) => finished(rt.waitForRun((item as { id: string }).id))))
  expect(runs.map((run) => run.result)).toEqual(payloads.map(({ n }) => n * 2))
  expect(ids(await rt.triggerMany('math.double', payloads, { idempotencyKey: 'nightly' }))).toEqual(ids(items))
  expect(await rt.listRuns({ taskName: 'math.double' })).toHaveLength(500)
})

it('answers STORE_FULL for the live runs past the bound, and starts the others', async () => {
  const rt = runtime([double], { store: store({ maxRuns: 3 }) })
  const items = await rt.triggerMany('math.double', [{ n: 1 }, { n: 2 }, { n: 3 }, { n: 4 }, { n: 5 }], { delaySeconds: 60 })
  expect(items.map((item) => (item.ok ? item.status : item.code))).toEqual([
    'scheduled',
    'scheduled',
    'scheduled',
    'STORE_FULL',
    'STORE_FULL',
  ])
})
