import { describe, expect, it } from 'vitest'
import * as v from 'valibot'
import { z } from 'zod'
import { createTaskRuntime, defineSchema, defineTask } from '../../src/index.ts'
import type { RouteModule } from '../../src/types.ts'
import { recordingLogger } from '../_helpers.ts'

describe('defineTask', () => {
  it('returns the handler itself, to be exported as the task module POST', () => {
    const handler = async () => 'done'
    expect(defineTask({ input: v.object({ n: v.number() }), handler })).toBe(handler)
    expect(defineTask({ handler })).toBe(handler)
  })

  it('a task module written with it runs with the validated output of its input schema', async () => {
    const input = z.object({ body: z.string().transform((text) => text.length) })
    const module: RouteModule = { route: { kind: 'task' }, input, POST: defineTask({ input, handler: (ctx) => ctx.input.body * 2 }) }
    const runtime = createTaskRuntime({ routes: [{ path: '/api/jobs/measure', module }], logger: recordingLogger(), env: {} })
    try {
      const run = await runtime.trigger('jobs.measure', { body: 'hello' })
      expect((await runtime.waitForRun(run.id)).result).toBe(10)
      await expect(runtime.trigger('jobs.measure', { body: 5 })).rejects.toMatchObject({ code: 'VALIDATION_FAILED' })
    } finally {
      await runtime.close()
    }
  })

  it('accepts a defineSchema() object as input', () => {
    const handler = () => undefined
    expect(defineTask({ input: defineSchema({ body: v.string() }), handler })).toBe(handler)
  })

  it('refuses a handler that is not a function, naming it', () => {
    expect(() => defineTask({ handler: 'run' as never })).toThrow(
      new TypeError('defineTask({ handler }): handler must be a function (got "run")'),
    )
    expect(() => defineTask(undefined as never)).toThrow(/definition must be an object with a handler \(got undefined\)/)
  })

  it('refuses an input that is not a schema, naming it', () => {
    expect(() => defineTask({ input: { n: 'number' } as never, handler: () => 1 })).toThrow(
      new TypeError('defineTask({ input }): input must be a Standard Schema or a defineSchema() object (got object)'),
    )
  })
})
