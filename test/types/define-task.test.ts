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

  const start = (module: RouteModule) =>
    createTaskRuntime({ routes: [{ path: '/api/jobs/measure', module }], logger: recordingLogger(), env: {} })

  it('a schema given to defineTask that the module does not export as input fails the task at start, rather than leave payloads unchecked', () => {
    const input = v.object({ n: v.number() })
    expect(() => start({ route: { kind: 'task' }, POST: defineTask({ input, handler: (ctx) => ctx.input.n }) })).toThrow(
      /Task "jobs\.measure" \(\/api\/jobs\/measure\): defineTask\(\) was given an input schema, but the file does not export it as `input`/,
    )
  })

  it('an input export other than the schema given to defineTask fails the task at start', () => {
    const typed = v.object({ n: v.number() })
    const exported = v.object({ n: v.string() })
    expect(() =>
      start({ route: { kind: 'task' }, input: exported, POST: defineTask({ input: typed, handler: (ctx) => ctx.input.n }) }),
    ).toThrow(/the `input` export is not the schema given to defineTask\(\)/)
  })

  it('one handler given to defineTask with two schemas serves two tasks, each exporting its own', async () => {
    const handler = (ctx: { input: unknown }) => ctx.input
    const a = v.object({ n: v.number() })
    const b = v.object({ s: v.string() })
    const runtime = createTaskRuntime({
      routes: [
        { path: '/api/a', module: { route: { kind: 'task' }, input: a, POST: defineTask({ input: a, handler }) } },
        { path: '/api/b', module: { route: { kind: 'task' }, input: b, POST: defineTask({ input: b, handler }) } },
      ],
      logger: recordingLogger(),
      env: {},
    })
    try {
      expect((await runtime.waitForRun((await runtime.trigger('b', { s: 'x' })).id)).result).toEqual({ s: 'x' })
    } finally {
      await runtime.close()
    }
  })
})
