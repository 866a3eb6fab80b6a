import { describe, expect, it, vi } from 'vitest'
import { createTaskRuntime, MemoryRunStore, tokenIdFor } from '../../src/runtime/tasks/index.ts'
import { PayloadTooLargeError } from '../../src/runtime/errors.ts'
import { utf8Length } from '../../src/runtime/tasks/base/json.ts'
import type { TaskContext } from '../../src/types.ts'
import { finished, finishedAfter, runtime, task, until, untimedSteps } from './_helpers.ts'

/** A string whose JSON text (quotes included) is exactly `bytes` bytes of ASCII. */
const jsonOf = (bytes: number) => 'x'.repeat(bytes - 2)

describe('maxPayloadBytes: inputs', () => {
  it('is 1 MiB of JSON by default: an input of exactly 1,048,576 bytes is taken, one byte more is refused with 413 PAYLOAD_TOO_LARGE', async () => {
    const store = new MemoryRunStore()
    const rt = runtime([task('echo', () => 'ok')], { store })
    const taken = await rt.trigger('echo', jsonOf(1_048_576))
    expect((await finished(rt.waitForRun(taken.id))).status).toBe('completed')
    const error = await rt.trigger('echo', jsonOf(1_048_577)).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(PayloadTooLargeError)
    expect(error).toMatchObject({ code: 'PAYLOAD_TOO_LARGE', status: 413 })
    expect((error as Error).message).toBe(
      'The input of task "echo" is 1,048,577 bytes of JSON, over the 1,048,576-byte limit (maxPayloadBytes)',
    )
    expect(await store.listRuns()).toHaveLength(1)
  })

  it('counts bytes of UTF-8, not characters', async () => {
    const rt = runtime([task('echo', () => 'ok')], { maxPayloadBytes: 20 })
    // 2 + 4 + 2 + 4 + 2 + … : `{"s":"` is 6 bytes, `"}` 2, each é 2 and each 😀 4.
    await expect(rt.trigger('echo', { s: 'éééééé' })).resolves.toMatchObject({ status: 'running' })
    const error = await rt.trigger('echo', { s: '😀😀😀😀' }).catch((e: unknown) => e)
    expect(error).toMatchObject({ code: 'PAYLOAD_TOO_LARGE' })
    expect((error as Error).message).toMatch(/is 24 bytes of JSON, over the 20-byte limit \(maxPayloadBytes\)$/)
  })

  it('applies whatever the enqueue options, and to a replay under a limit lowered since', async () => {
    const store = new MemoryRunStore()
    const big = { text: 'y'.repeat(100) }
    const before = runtime([task('echo', () => 'ok')], { store })
    const earlier = await before.trigger('echo', big)
    await finished(before.waitForRun(earlier.id))
    await before.close()
    const rt = runtime([task('echo', () => 'ok')], { store, maxPayloadBytes: 64 })
    await expect(rt.trigger('echo', big, { idempotencyKey: 'k', delaySeconds: 60 })).rejects.toMatchObject({ code: 'PAYLOAD_TOO_LARGE' })
    await expect(rt.replay(earlier.id)).rejects.toMatchObject({ code: 'PAYLOAD_TOO_LARGE', status: 413 })
    const small = await rt.trigger('echo', { text: 'y' })
    expect((await finished(rt.waitForRun(small.id))).status).toBe('completed')
  })

  it('a child run over the limit rejects step.enqueue and step.waitForTask with PAYLOAD_TOO_LARGE, which the parent may catch', async () => {
    const codes: unknown[] = []
    const rt = runtime(
      [
        task('child', () => 'done'),
        task('parent', async (ctx) => {
          const big = { text: 'z'.repeat(200) }
          for (const call of [() => ctx.step.enqueue('e', 'child', big), () => ctx.step.waitForTask('w', 'child', big)]) {
            try {
              await call()
            } catch (error) {
              codes.push((error as { code?: string }).code, (error as Error).message)
            }
          }
          return 'caught'
        }),
      ],
      { maxPayloadBytes: 100 },
    )
    const done = await finished(rt.waitForRun((await rt.trigger('parent')).id))
    expect(done).toMatchObject({ status: 'completed', result: 'caught' })
    expect(codes).toEqual([
      'PAYLOAD_TOO_LARGE',
      'The input of task "child" is 211 bytes of JSON, over the 100-byte limit (maxPayloadBytes)',
      'PAYLOAD_TOO_LARGE',
      'The input of task "child" is 211 bytes of JSON, over the 100-byte limit (maxPayloadBytes)',
    ])
    expect(await rt.listRuns({ taskName: 'child' })).toEqual([])
  })
})

describe('maxPayloadBytes: results and step outputs', () => {
  it('a result over the limit fails the attempt with a message naming the size and the limit, and retries apply', async () => {
    vi.useFakeTimers()
    const rt = runtime([task('big', (ctx: TaskContext) => (ctx.attempt === 1 ? 'r'.repeat(98) : 'small'), { route: { retries: 1 } })], {
      maxPayloadBytes: 64,
    })
    const run = await rt.trigger('big')
    const done = await finishedAfter(rt, run.id, 60_000)
    expect(done).toMatchObject({ status: 'completed', result: 'small' })
    expect(done.attempts[0].error).toBe('Task "big" returned 100 bytes of JSON, over the 64-byte limit (maxPayloadBytes)')
  })

  it('a result over the limit with no retry left fails the run', async () => {
    const rt = runtime([task('big', () => ({ rows: 'r'.repeat(200) }))], { maxPayloadBytes: 64 })
    const done = await finished(rt.waitForRun((await rt.trigger('big')).id))
    expect(done.status).toBe('failed')
    expect(done.result).toBeUndefined()
    expect(done.attempts[0].error).toMatch(/^Task "big" returned 211 bytes of JSON, over the 64-byte limit \(maxPayloadBytes\)$/)
  })

  it('a step output over the limit is not recorded and fails the attempt', async () => {
    const rt = runtime(
      [
        task('steps', async (ctx) => {
          await ctx.step.run('small', () => 1)
          await ctx.step.run('big', () => 's'.repeat(100))
          return 'unreachable'
        }),
      ],
      { maxPayloadBytes: 64 },
    )
    const done = await finished(rt.waitForRun((await rt.trigger('steps')).id))
    expect(done.status).toBe('failed')
    expect(untimedSteps(done.steps)).toEqual({ small: { status: 'completed', output: 1, kind: 'run' } })
    expect(done.attempts[0].error).toBe('ctx.step.run("big") returned 102 bytes of JSON, over the 64-byte limit (maxPayloadBytes)')
  })
})

describe('maxPayloadBytes: token payloads', () => {
  it('completeToken with a payload over the limit rejects with 413 PAYLOAD_TOO_LARGE and leaves the token waiting', async () => {
    const rt = runtime([task('approve', (ctx) => ctx.step.waitForToken('ok'))], { maxPayloadBytes: 64 })
    const run = await rt.trigger('approve')
    await until(async () => (await rt.getRun(run.id))?.status === 'suspended')
    const tokenId = tokenIdFor(run.id, 'ok')
    const error = await rt.completeToken(tokenId, { note: 'n'.repeat(100) }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(PayloadTooLargeError)
    expect((error as Error).message).toBe(
      `The payload of token "${tokenId}" is 111 bytes of JSON, over the 64-byte limit (maxPayloadBytes)`,
    )
    expect((await rt.store.getToken(tokenId))?.status).toBe('waiting')
    expect(await rt.completeToken(tokenId, { note: 'fine' })).toBe('completed')
    expect((await finished(rt.waitForRun(run.id))).result).toEqual({ payload: { note: 'fine' } })
  })
})

describe('maxPayloadBytes option', () => {
  it('is checked like the other options', () => {
    const routes = [task('echo', () => 'ok')]
    expect(() => createTaskRuntime({ routes, maxPayloadBytes: 0 })).toThrow(
      new RangeError('createTaskRuntime(): maxPayloadBytes must be a positive whole number of bytes (got 0)'),
    )
    expect(() => createTaskRuntime({ routes, maxPayloadBytes: 1.5 })).toThrow(RangeError)
    expect(() => createTaskRuntime({ routes, maxPayloadBytes: '1mb' as never })).toThrow(
      new TypeError('createTaskRuntime(): maxPayloadBytes must be a positive whole number of bytes (got "1mb")'),
    )
  })

  it('is what the runtime reports', () => {
    expect(runtime([]).maxPayloadBytes).toBe(1_048_576)
    expect(runtime([], { maxPayloadBytes: 10 }).maxPayloadBytes).toBe(10)
  })
})

describe('utf8Length', () => {
  it('counts the bytes TextEncoder would write', () => {
    for (const text of ['', 'abc', 'é', '€', '😀', 'a😀b€é', '\u0000\u007f\u0080\u07ff\u0800\uffff']) {
      expect(utf8Length(text)).toBe(new TextEncoder().encode(text).length)
    }
  })
})
