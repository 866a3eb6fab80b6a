import { type } from 'arktype'
import * as v from 'valibot'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { ValidationError } from '../../src/runtime/errors.ts'
import { defineSchema } from '../../src/runtime/schema.ts'
import { runtime, task } from './_helpers.ts'

// Each schema takes { email, count: numeric string } and turns count into a
// number, so a transform must reach ctx.input.
const schemas = {
  valibot: v.object({
    email: v.pipe(v.string(), v.email()),
    count: v.pipe(v.string(), v.transform(Number)),
  }),
  zod: z.object({ email: z.email(), count: z.string().transform(Number) }),
  arktype: type({ email: 'string.email', count: 'string.numeric.parse' }),
}

describe('task input validation (VALIDATION_FAILED)', () => {
  for (const [library, schema] of Object.entries(schemas)) {
    describe(library, () => {
      it('the validated, transformed value is what ctx.input holds', async () => {
        let input: unknown
        const rt = runtime([task('signup', (ctx) => (input = ctx.input), { input: schema })])
        const run = await rt.trigger('signup', { email: 'ada@example.com', count: '3' })
        expect(run.input).toEqual({ email: 'ada@example.com', count: 3 })
        await rt.waitForRun(run.id)
        expect(input).toEqual({ email: 'ada@example.com', count: 3 })
      })

      it('a failing payload rejects with details and starts no run', async () => {
        let calls = 0
        const rt = runtime([task('signup', () => calls++, { input: schema })])
        const error = (await rt.trigger('signup', { email: 'not-an-email', count: '3' }).catch((e) => e)) as ValidationError
        expect(error).toBeInstanceOf(ValidationError)
        expect(error.toJSON()).toMatchObject({ code: 'VALIDATION_FAILED' })
        expect(error.details.some((d) => d.target === 'input' && d.path.join('.') === 'email')).toBe(true)
        expect(await rt.listRuns()).toHaveLength(0)
        expect(calls).toBe(0)
      })
    })
  }

  it('a defineSchema({ body }) input validates and transforms the payload', async () => {
    const rt = runtime([task('hook', (ctx) => ctx.input, { input: defineSchema({ body: z.object({ n: z.coerce.number() }) }) })])
    const done = await rt.waitForRun((await rt.trigger('hook', { n: '7' })).id)
    expect(done.result).toEqual({ n: 7 })
    const error = (await rt.trigger('hook', { n: 'x' }).catch((e) => e)) as ValidationError
    expect(error.details[0]).toMatchObject({ target: 'body', path: ['n'] })
  })

  it('scheduled runs skip validation and get { _cron: true }', async () => {
    const seen: unknown[] = []
    const rt = runtime([task('nightly', (ctx) => seen.push(ctx.input), { input: schemas.zod, schedule: '0 3 * * *' })])
    const [run] = await rt.runScheduled('0 3 * * *')
    expect(run.trigger).toBe('cron')
    await rt.waitForRun(run.id)
    expect(seen).toEqual([{ _cron: true }])
  })

  it('child runs started by steps are validated too', async () => {
    const rt = runtime([
      task('strict', () => 'ok', { input: schemas.valibot }),
      task('parent', async (ctx) => ctx.step.waitForTask('c', 'strict', { email: 'nope' })),
    ])
    const done = await rt.waitForRun((await rt.trigger('parent')).id)
    expect(done.status).toBe('failed')
    expect(done.attempts[0].error).toMatch(/^Validation failed: input\.email/)
  })
})
