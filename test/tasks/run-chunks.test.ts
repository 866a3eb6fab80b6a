/**
 * `ctx.stream(name, data)`: a run's data chunks, kept in its record in
 * order and bounded, with arguments checked at the call; a replay (a
 * resume, a retry) sends nothing twice, a step run again sends its chunks
 * again; chunks sent without waiting are stored together, before the
 * run's end; a call after the attempt is over throws as a step would.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it, vi } from 'vitest'
import { SqliteRunStore } from '../../src/node.ts'
import { MAX_RUN_CHUNK_BYTES, MAX_RUN_CHUNKS, onChunksStored, withChunk } from '../../src/runtime/tasks/steps/run-chunks.ts'
import { MemoryRunStore, type RunPatch } from '../../src/runtime/tasks/index.ts'
import type { RunChunk, RunRecord, TaskContext } from '../../src/types.ts'
import { deferred, finished, finishedAfter, runtime, task, until } from './_helpers.ts'

const dir = mkdtempSync(join(tmpdir(), 'svc-run-chunks-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
let files = 0

/** What the chunks of `run` say, as `name:data`. */
const said = (run: RunRecord | undefined) => (run?.chunks?.kept ?? []).map((chunk) => `${chunk.name}:${JSON.stringify(chunk.data)}`)

describe('ctx.stream', () => {
  for (const kind of ['memory', 'sqlite'] as const) {
    it(`keeps each chunk in the run's record, in order, with its seq, name, data and time (${kind})`, async () => {
      const store = kind === 'sqlite' ? new SqliteRunStore({ path: join(dir, `runs-${++files}.db`) }) : undefined
      const rt = runtime(
        [
          task('write', async (ctx) => {
            await ctx.stream('progress', { done: 1, of: 2 })
            await ctx.stream('text', 'Hello')
            await ctx.stream('progress', { done: 2, of: 2 })
            return 'ok'
          }),
        ],
        store ? { store } : {},
      )
      const before = Date.now()
      const done = await finished(rt.waitForRun((await rt.trigger('write')).id))
      expect(done.status).toBe('completed')
      expect(done.chunks?.kept).toEqual([
        { seq: 1, name: 'progress', data: { done: 1, of: 2 }, at: expect.any(String) },
        { seq: 2, name: 'text', data: 'Hello', at: expect.any(String) },
        { seq: 3, name: 'progress', data: { done: 2, of: 2 }, at: expect.any(String) },
      ])
      expect(Date.parse(done.chunks!.kept[0].at)).toBeGreaterThanOrEqual(before - 1)
      expect(done.chunks?.calls).toBe(3)
      expect(done.chunks?.bytes).toBe(JSON.stringify({ done: 1, of: 2 }).length * 2 + JSON.stringify('Hello').length)
    })
  }

  it('throws a TypeError at the call for a bad name or data JSON cannot hold, and a RangeError for data too large', async () => {
    const errors: unknown[] = []
    const attempt = (call: () => unknown) => {
      try {
        call()
        errors.push('no error')
      } catch (error) {
        errors.push(error)
      }
    }
    const cyclic: Record<string, unknown> = {}
    cyclic.self = cyclic
    const rt = runtime([
      task('misuse', (ctx) => {
        attempt(() => ctx.stream('', 1))
        attempt(() => ctx.stream('has space', 1))
        attempt(() => ctx.stream('x'.repeat(65), 1))
        attempt(() => ctx.stream(42 as never, 1))
        attempt(() => ctx.stream('ok', undefined))
        attempt(() => ctx.stream('ok', () => 1))
        attempt(() => ctx.stream('ok', 10n))
        attempt(() => ctx.stream('ok', cyclic))
        attempt(() => ctx.stream('ok', 'é'.repeat(MAX_RUN_CHUNK_BYTES / 2)))
        return 'checked'
      }),
    ])
    const done = await finished(rt.waitForRun((await rt.trigger('misuse')).id))
    expect(done.status).toBe('completed')
    expect(done.chunks).toBeUndefined()
    const rule = /name must be 1 to 64 letters, digits, '\.', '-' or '_', such as 'progress'/
    expect(errors.map((error) => [(error as Error).name, (error as Error).message])).toEqual([
      ['TypeError', expect.stringMatching(new RegExp(`^ctx\\.stream\\(""\\, data\\): ${rule.source} \\(got ""\\)$`))],
      ['TypeError', expect.stringMatching(/^ctx\.stream\("has space", data\): name must be .* \(got "has space"\)$/)],
      ['TypeError', expect.stringMatching(/name must be .* \(got "x{57}\.\.\."\)$/)],
      ['TypeError', expect.stringMatching(/^ctx\.stream\(name, data\): name must be .* \(got 42\)$/)],
      ['TypeError', 'ctx.stream("ok", data): data must be a JSON value, such as a number, a string or an object (got undefined)'],
      ['TypeError', 'ctx.stream("ok", data): data must be a JSON value, such as a number, a string or an object (got a function)'],
      ['TypeError', expect.stringMatching(/^ctx\.stream\("ok", data\): data cannot be sent as JSON: .*BigInt/)],
      ['TypeError', expect.stringMatching(/^ctx\.stream\("ok", data\): data cannot be sent as JSON: .*circular/i)],
      [
        'RangeError',
        'ctx.stream("ok", data): data is 65,538 bytes of JSON, over the 65,536-byte limit of a chunk; send it in smaller chunks',
      ],
    ])
  })

  it('keeps a copy of the data: changing the object afterwards changes no chunk', async () => {
    const rt = runtime([
      task('copy', async (ctx) => {
        const data = { n: 1 }
        const sent = ctx.stream('state', data)
        data.n = 2
        await sent
        return data
      }),
    ])
    const done = await finished(rt.waitForRun((await rt.trigger('copy')).id))
    expect(done.chunks?.kept[0].data).toEqual({ n: 1 })
  })

  it(`keeps the last ${MAX_RUN_CHUNKS} chunks; the seq of the first kept says how many were dropped`, async () => {
    const rt = runtime([
      task('many', async (ctx) => {
        for (let i = 1; i <= 150; i++) await ctx.stream('n', i)
      }),
    ])
    const done = await finished(rt.waitForRun((await rt.trigger('many')).id))
    const kept = done.chunks!.kept
    expect(kept).toHaveLength(MAX_RUN_CHUNKS)
    expect(kept[0]).toMatchObject({ seq: 51, data: 51 })
    expect(kept.at(-1)).toMatchObject({ seq: 150, data: 150 })
    expect(done.chunks?.calls).toBe(150)
  })

  it(`keeps at most ${MAX_RUN_CHUNK_BYTES} bytes of data, dropping the oldest chunks first`, async () => {
    const piece = 'x'.repeat(20_000)
    const rt = runtime([
      task('large', async (ctx) => {
        for (let i = 0; i < 5; i++) await ctx.stream('piece', piece)
      }),
    ])
    const done = await finished(rt.waitForRun((await rt.trigger('large')).id))
    // Three of 20,002 bytes fit in 64 KiB; a fourth would not.
    expect(done.chunks?.kept.map((chunk) => chunk.seq)).toEqual([3, 4, 5])
    expect(done.chunks?.bytes).toBe(3 * 20_002)
  })

  it('withChunk keeps the newest chunk whatever its size, and makes a new log rather than change the one given', () => {
    const chunk = (seq: number, data: unknown): RunChunk => ({ seq, name: 'n', data, at: '2025-01-01T00:00:00.000Z' })
    const big = 'y'.repeat(MAX_RUN_CHUNK_BYTES - 2)
    const first = withChunk(undefined, chunk(1, 'a'), 3, 1)
    const second = withChunk(first, chunk(2, big), MAX_RUN_CHUNK_BYTES)
    expect(first).toEqual({ kept: [chunk(1, 'a')], bytes: 3, calls: 1 })
    expect(second).toEqual({ kept: [chunk(2, big)], bytes: MAX_RUN_CHUNK_BYTES, calls: 1 })
  })

  it('sends nothing twice when the handler runs again after a suspension: counted calls a replay makes are skipped', async () => {
    const sent: string[] = []
    const rt = runtime([
      task('story', async (ctx) => {
        sent.push('once upon')
        await ctx.stream('text', 'once upon')
        await ctx.step.run('think', async () => {
          sent.push('thinking')
          await ctx.stream('status', 'thinking')
          return 1
        })
        await ctx.stream('text', 'a time')
        await ctx.step.sleep('pause', 0.02)
        await ctx.stream('text', 'the end')
        await ctx.step.sleep('again', 0.02)
        return 'told'
      }),
    ])
    const done = await finished(rt.waitForRun((await rt.trigger('story')).id))
    expect(done.status).toBe('completed')
    // Three executions: the first, and one after each sleep.
    expect(sent).toEqual(['once upon', 'thinking', 'once upon', 'once upon'])
    expect(said(done)).toEqual(['text:"once upon"', 'status:"thinking"', 'text:"a time"', 'text:"the end"'])
    expect(done.chunks?.kept.map((chunk) => chunk.seq)).toEqual([1, 2, 3, 4])
    // The chunk sent inside the step is not counted: a replay does not reach it.
    expect(done.chunks?.calls).toBe(3)
  })

  it('sends nothing twice on a retry, while a step that runs again sends its chunks again', async () => {
    vi.useFakeTimers()
    const rt = runtime([
      task(
        'draft',
        async (ctx: TaskContext) => {
          await ctx.stream('text', 'title')
          await ctx.step.run('outline', async () => {
            await ctx.stream('status', `outlining ${ctx.attempt}`)
            return 'outline'
          })
          await ctx.step.run('body', async () => {
            await ctx.stream('status', `writing ${ctx.attempt}`)
            if (ctx.attempt === 1) throw new Error('the model timed out')
            return 'body'
          })
          await ctx.stream('text', 'done')
        },
        { route: { retries: 1 } },
      ),
    ])
    const done = await finishedAfter(rt, (await rt.trigger('draft')).id, 100)
    expect(done.status).toBe('completed')
    expect(said(done)).toEqual(['text:"title"', 'status:"outlining 1"', 'status:"writing 1"', 'status:"writing 2"', 'text:"done"'])
  })

  it('stores the chunks sent without waiting, in order, in fewer writes, before the run ends', async () => {
    const store = new MemoryRunStore()
    const writes: RunPatch[] = []
    const updateRun = store.updateRun.bind(store)
    store.updateRun = (id, patch, expect) => {
      if (patch.chunks) writes.push(patch)
      return updateRun(id, patch, expect)
    }
    const rt = runtime(
      [
        task('burst', (ctx) => {
          for (let i = 1; i <= 20; i++) void ctx.stream('n', i)
          return 'sent'
        }),
      ],
      { store },
    )
    const done = await finished(rt.waitForRun((await rt.trigger('burst')).id))
    expect(done.status).toBe('completed')
    expect(done.chunks?.kept.map((chunk) => chunk.data)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1))
    expect(writes.length).toBeGreaterThan(0)
    expect(writes.length).toBeLessThan(20)
  })

  it('logs a write that fails with the task and run, and rejects the promise of its chunks, without failing a handler that did not wait', async () => {
    const store = new MemoryRunStore()
    const updateRun = store.updateRun.bind(store)
    store.updateRun = (id, patch, expect) => (patch.chunks ? Promise.reject(new Error('disk full')) : updateRun(id, patch, expect))
    let awaited: unknown
    const rt = runtime(
      [
        task('unlucky', async (ctx) => {
          void ctx.stream('n', 1)
          awaited = await ctx.stream('n', 2).catch((error: Error) => error.message)
          void ctx.stream('n', 3)
          return 'done anyway'
        }),
      ],
      { store },
    )
    const done = await finished(rt.waitForRun((await rt.trigger('unlucky')).id))
    expect(done).toMatchObject({ status: 'completed', result: 'done anyway' })
    expect(done.chunks).toBeUndefined()
    expect(awaited).toBe('disk full')
    // Two writes: the first two chunks went together.
    const line = `[svc] task "unlucky": run ${done.id}: ctx.stream could not store its chunks: disk full`
    expect(rt.logger.text('error')).toBe(`${line}\n${line}`)
  })

  it('tells the listeners of a run each time its chunks are stored in this process', async () => {
    const go = deferred()
    const rt = runtime([
      task('told', async (ctx) => {
        await go.promise
        await ctx.stream('a', 1)
        await ctx.stream('b', 2)
      }),
    ])
    const { id } = await rt.trigger('told')
    let told = 0
    const stop = onChunksStored(id, () => told++)
    go.resolve()
    await finished(rt.waitForRun(id))
    stop()
    expect(told).toBe(2)
  })

  it('throws as a later step would once the attempt is over, and stores nothing more', async () => {
    let kept: TaskContext | undefined
    const rt = runtime([
      task('leaves', async (ctx) => {
        kept = ctx
        await ctx.stream('a', 1)
        return 'done'
      }),
    ])
    const done = await finished(rt.waitForRun((await rt.trigger('leaves')).id))
    expect(() => kept!.stream('late', 2)).toThrow(
      `ctx.stream("late") was called after attempt 1 of task "leaves" ended; the chunk was not sent`,
    )
    expect(said(await rt.getRun(done.id))).toEqual(['a:1'])
  })

  it('throws after a cancel, saying so', async () => {
    const hold = deferred()
    let error: unknown
    const rt = runtime([
      task('cancelled', async (ctx) => {
        await ctx.stream('a', 1)
        await hold.promise
        try {
          await ctx.stream('b', 2)
        } catch (thrown) {
          error = thrown
        }
      }),
    ])
    const { id } = await rt.trigger('cancelled')
    await until(async () => (await rt.getRun(id))?.chunks !== undefined)
    await rt.cancel(id)
    hold.resolve()
    await until(() => error !== undefined)
    expect((error as Error).message).toBe(
      'ctx.stream("b") was called after attempt 1 of task "cancelled" was cancelled; the chunk was not sent',
    )
    expect(said(await rt.getRun(id))).toEqual(['a:1'])
  })
})
