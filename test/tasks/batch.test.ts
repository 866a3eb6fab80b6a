/**
 * Batch triggers: `runtime.triggerMany`, `enqueueMany` and
 * `POST /__tasks/<name>/batch` start one run per payload, recorded together,
 * and answer per payload, in order: the run, or why none started.
 */
import * as v from 'valibot'
import { afterEach, describe, expect, it } from 'vitest'
import { SqliteRunStore, startSvcServer, type SvcServer } from '../../src/node.ts'
import { enqueueManyOverHttp } from '../../src/runtime/tasks/client/client.ts'
import { batchItemKey, MAX_BATCH_ITEMS } from '../../src/runtime/tasks/flow/batch.ts'
import { MemoryRunStore } from '../../src/runtime/tasks/store/memory-store.ts'
import type { BatchItem, RunRecord } from '../../src/types.ts'
import { sqliteFiles } from '../node/_sqlite-files.ts'
import { finished, runtime, task } from './_helpers.ts'

const { dbFile } = sqliteFiles('svc-batch-')

const double = task('math.double', (ctx) => ctx.input.n * 2, { input: v.object({ n: v.number() }) })

const started = (items: BatchItem[]) => items.filter((item): item is Extract<BatchItem, { ok: true }> => item.ok)

describe('triggerMany', () => {
  for (const [label, store] of [
    ['the memory store', () => new MemoryRunStore()],
    ['a SQLite file', () => new SqliteRunStore({ path: dbFile() })],
  ] as const) {
    it(`starts one run per valid payload and answers each by index, on ${label}`, async () => {
      const rt = runtime([double], { store: store() })
      const payloads = [{ n: 1 }, { n: 'two' }, { n: 3 }, 4, { n: 5 }]
      const items = await rt.triggerMany('math.double', payloads)
      expect(items.map((item) => item.ok)).toEqual([true, false, true, false, true])
      expect(items[1]).toMatchObject({ ok: false, code: 'VALIDATION_FAILED', details: [expect.objectContaining({ target: 'input' })] })
      expect(items[3]).toMatchObject({ ok: false, code: 'VALIDATION_FAILED' })
      const runs = await Promise.all(started(items).map((item) => finished(rt.waitForRun(item.id))))
      expect(runs.map((run) => run.result)).toEqual([2, 6, 10])
      expect(new Set(runs.map((run) => run.id)).size).toBe(3)
    })
  }

  it("with an idempotency key, gives item i a key of svc's own made from the key and i: the same batch sent again starts nothing more", async () => {
    const rt = runtime([double], { store: new SqliteRunStore({ path: dbFile() }) })
    const first = await rt.triggerMany('math.double', [{ n: 1 }, { n: 2 }], { idempotencyKey: 'import-7' })
    const again = await rt.triggerMany('math.double', [{ n: 1 }, { n: 2 }, { n: 3 }], { idempotencyKey: 'import-7' })
    expect(
      started(again)
        .slice(0, 2)
        .map((item) => item.id),
    ).toEqual(started(first).map((item) => item.id))
    const runs = await rt.listRuns({ taskName: 'math.double' })
    expect(runs.map((run) => run.idempotencyKey).sort()).toEqual([0, 1, 2].map((i) => batchItemKey('import-7', i)))
  })

  it('delays every run with delaySeconds, and answers STORE_FULL for the runs past the bound while the others start', async () => {
    const rt = runtime([double], { store: new MemoryRunStore({ maxRuns: 3 }) })
    const delayed = await rt.triggerMany('math.double', [{ n: 1 }], { delaySeconds: 60 })
    expect(delayed).toEqual([{ ok: true, id: expect.any(String), status: 'scheduled' }])
    const items = await rt.triggerMany('math.double', [{ n: 1 }, { n: 2 }, { n: 3 }, { n: 4 }])
    expect(items.map((item) => (item.ok ? 'ok' : item.code))).toEqual(['ok', 'ok', 'STORE_FULL', 'STORE_FULL'])
  })

  it('records a debounced task run by run, each joining or starting one as a trigger would', async () => {
    const debounced = task('mail.digest', (ctx) => ctx.input, { route: { debounce: { seconds: 60 } } })
    const rt = runtime([debounced])
    const items = await rt.triggerMany('mail.digest', [{ a: 1 }, { a: 2 }])
    expect(items.every((item) => item.ok && item.status === 'scheduled')).toBe(true)
    const runs = await rt.listRuns({ taskName: 'mail.digest' })
    expect(runs).toHaveLength(1)
    expect(runs[0].input).toEqual({ a: 2 })
  })

  it('refuses what is not a batch: an unknown task, a payload list that is not an array or holds more than 10,000, a parent run', async () => {
    const rt = runtime([double])
    await expect(rt.triggerMany('math.triple', [])).rejects.toMatchObject({ code: 'TASK_NOT_FOUND' })
    await expect(rt.triggerMany('math.double', { n: 1 } as never)).rejects.toThrow(/payloads must be an array/)
    await expect(
      rt.triggerMany(
        'math.double',
        Array.from({ length: MAX_BATCH_ITEMS + 1 }, () => ({ n: 1 })),
      ),
    ).rejects.toThrow(/at most 10,000 runs go in one batch \(got 10001\)/)
    await expect(rt.triggerMany('math.double', [], { parentRunId: 'r' })).rejects.toThrow(/a batch takes no parentRunId/)
    expect(await rt.triggerMany('math.double', [])).toEqual([])
  })
})

describe('POST /__tasks/<name>/batch and enqueueMany over HTTP', () => {
  let server: SvcServer | undefined
  afterEach(async () => {
    await server?.close()
    server = undefined
  })

  it('starts the runs of a JSON array, answers 202 { runs } by index, and refuses a body that is not an array', async () => {
    server = await startSvcServer({
      apiRoutes: [double],
      pages: [],
      port: 0,
      host: '127.0.0.1',
      logger: { info() {}, warn() {}, error() {} },
    })
    const env = { SVC_TASK_URL: `http://127.0.0.1:${server.port}`, SVC_TASK_SECRET: undefined, NODE_ENV: 'test' }
    const items = await enqueueManyOverHttp('math.double', [{ n: 1 }, { n: 'x' }, { n: 2 }], { idempotencyKey: 'b-1' }, env)
    expect(items.map((item) => item.ok)).toEqual([true, false, true])
    const runs = await Promise.all(started(items).map((item) => server!.runtime.waitForRun(item.id)))
    expect(runs.map((run: RunRecord) => [run.result, run.idempotencyKey])).toEqual([
      [2, batchItemKey('b-1', 0)],
      [4, batchItemKey('b-1', 2)],
    ])

    const post = (body: string, name = 'math.double') =>
      fetch(`${env.SVC_TASK_URL}/__tasks/${name}/batch`, { method: 'POST', headers: { 'content-type': 'application/json' }, body })
    const notArray = await post('{"n":1}')
    expect(notArray.status).toBe(400)
    expect(await notArray.json()).toMatchObject({ code: 'INVALID_BATCH' })
    expect((await post('[]', 'math.triple')).status).toBe(404)
    expect((await fetch(`${env.SVC_TASK_URL}/__tasks/math.double/batch`)).status).toBe(405)
  })
})
