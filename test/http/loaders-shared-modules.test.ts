import { cp, mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { loadApiRoutes, loadPages } from '../../src/node.ts'
import { serve } from './_helpers.ts'

const fixture = fileURLToPath(new URL('../fixtures/shared-helpers-app', import.meta.url))

describe('an app loaded with loadApiRoutes and loadPages', () => {
  let root: string
  beforeAll(async () => {
    // A fresh copy: module instances are per file, and this test wants its own.
    root = join(await mkdtemp(join(tmpdir(), 'svc-shared-')), 'app')
    await cp(fixture, root, { recursive: true })
  })
  afterAll(() => rm(join(root, '..'), { recursive: true, force: true }))

  // As in a built bundle and in Node itself, a module imported by several
  // files is one instance: its state is shared by every route, page and task.
  it('shares one instance of a helper module between routes, pages and tasks', async () => {
    const server = await serve({ apiRoutes: await loadApiRoutes({ root }), pages: await loadPages({ root }), env: { NODE_ENV: 'test' } })
    const add = (name: string) =>
      fetch(`${server.url}/api/items`, { method: 'POST', body: JSON.stringify({ name }) }).then((res) => res.json())
    expect(await add('apple')).toEqual({ count: 1 })
    expect(await add('pear')).toEqual({ count: 2 })
    expect(await (await fetch(`${server.url}/api/count`)).json()).toEqual({ count: 2 })
    expect(await (await fetch(`${server.url}/`)).text()).toBe('<ul><li>apple</li><li>pear</li></ul>')
    const run = (await (await fetch(`${server.url}/__tasks/jobs.remember`, { method: 'POST', body: '{"name":"plum"}' })).json()) as {
      id: string
    }
    expect((await server.runtime.waitForRun(run.id)).result).toEqual({ count: 3 })
    expect(await (await fetch(`${server.url}/api/count`)).json()).toEqual({ count: 3 })
  })

  // `svc` in app code is the server's own copy, so the errors it exports
  // keep their status and code (spec "Errors"; README "Errors with a stable code").
  it('answers errors thrown from svc’s own classes with their status and code', async () => {
    const server = await serve({ apiRoutes: await loadApiRoutes({ root }), pages: [] })
    const conflict = await fetch(`${server.url}/api/conflict`)
    expect(conflict.status).toBe(409)
    expect(await conflict.json()).toEqual({ error: 'That name is taken', code: 'NAME_TAKEN' })
    const payment = await fetch(`${server.url}/api/conflict`, { method: 'PUT' })
    expect(payment.status).toBe(402)
    expect((await payment.json()).code).toBe('PAYMENT_REQUIRED')
    const invalid = await fetch(`${server.url}/api/conflict`, { method: 'POST' })
    expect(invalid.status).toBe(400)
    expect(await invalid.json()).toMatchObject({
      code: 'VALIDATION_FAILED',
      details: [{ target: 'body', path: ['name'], message: 'Expected a name' }],
    })
  })
})
