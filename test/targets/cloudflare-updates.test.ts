/**
 * Updates to a run in the `SvcTasks` Durable Object (docs/tasks.md
 * "Updates"): the built worker of the durable app (test/fixtures/durable-app,
 * `jobs.cart`) in real workerd, over HTTP through the worker. The errors the
 * object's runtime throws cross its RPC with their status and code, a
 * pending update is answered 202, and across a restart (`mf.dispose()` and a
 * new Miniflare on the same storage) an update id gets its kept answer while
 * a new update is answered by a run whose handler was given the earlier
 * updates again. And a cancel that compensates, of a run sleeping in the
 * object.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Miniflare, type MiniflareOptions } from 'miniflare'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildApp } from '../../src/build/build.ts'
import { copyFixtureApp } from './_app.ts'

const SECRET = 'updates-secret-0123456789abcdef01234'

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

describe('updates to a run in the SvcTasks Durable Object', () => {
  let app: Awaited<ReturnType<typeof copyFixtureApp>>
  let out: string
  let persist: string
  let mf: Miniflare

  async function start(): Promise<void> {
    const { unstable_getMiniflareWorkerOptions } = await import('wrangler')
    const { workerOptions, main } = unstable_getMiniflareWorkerOptions(join(out, 'wrangler.json'))
    mf = new Miniflare({
      ...(workerOptions as object),
      scriptPath: main!,
      modulesRoot: out,
      modules: true,
      bindings: { SVC_TASK_SECRET: SECRET },
      durableObjectsPersist: persist,
    } as MiniflareOptions)
    await mf.ready
  }

  beforeAll(async () => {
    app = await copyFixtureApp('durable-app')
    await buildApp({ root: app.root, target: 'cloudflare' })
    out = join(app.root, '.output/cloudflare')
    persist = await mkdtemp(join(tmpdir(), 'svc-do-updates-'))
    await start()
  }, 120_000)
  afterAll(async () => {
    await mf?.dispose()
    await app?.cleanup()
    if (persist) await rm(persist, { recursive: true, force: true })
  })

  async function admin(
    path: string,
    init: { method?: string; body?: unknown; headers?: Record<string, string> } = {},
  ): Promise<{ status: number; body: any }> {
    const res = await mf.dispatchFetch(`http://worker${path}`, {
      method: init.method ?? (init.body === undefined ? 'GET' : 'POST'),
      headers: { authorization: `Bearer ${SECRET}`, 'content-type': 'application/json', ...init.headers },
      body: init.body === undefined ? undefined : JSON.stringify(init.body),
    })
    return { status: res.status, body: await res.json() }
  }

  const waitForStatus = async (id: string, status: string) => {
    for (let i = 0; ; i++) {
      const current = (await admin(`/__tasks/${encodeURIComponent(id)}`)).body
      if (current.status === status) return current
      if (i > 600) throw new Error(`run ${id} is ${current.status}, never ${status}`)
      await sleep(25)
    }
  }

  it('answers updates through the worker, keeps each id’s answer across a restart, and rebuilds the run’s state on replay', async () => {
    const started = await admin('/__tasks/jobs.cart', { body: {} })
    expect(started.status).toBe(202)
    const id = started.body.id as string
    await waitForStatus(id, 'suspended')
    const update = (name: string, data: unknown, key?: string, query = '') =>
      admin(`/__tasks/runs/${id}/updates/${name}${query}`, {
        method: 'POST',
        ...(data === undefined ? {} : { body: data }),
        headers: key === undefined ? {} : { 'idempotency-key': key },
      })

    expect(await update('add-item', { sku: 'A-1' }, 'u-1')).toMatchObject({
      status: 200,
      body: { id: 'u-1', runId: id, name: 'add-item', status: 'completed', result: { count: 1, items: ['A-1'] } },
    })
    expect((await update('add-item', { sku: 'B-2' }, 'u-2')).body.result).toEqual({ count: 2, items: ['A-1', 'B-2'] })

    // Errors cross the object's RPC with their status and code; none of them touches the run.
    const bad = await update('add-item', { sku: '' }, 'bad-1')
    expect(bad).toMatchObject({ status: 400, body: { code: 'VALIDATION_FAILED' } })
    expect(bad.body.details).toEqual([expect.objectContaining({ message: 'sku is a string of at least one character' })])
    expect(await update('add-item', { sku: 'bomb' }, 'bomb-1')).toMatchObject({
      status: 422,
      body: { code: 'UPDATE_FAILED', error: expect.stringContaining('no bombs in carts') },
    })
    expect(await update('remove-item', { sku: 'A-1' })).toMatchObject({ status: 404, body: { code: 'UPDATE_NOT_HANDLED' } })
    expect(await update(encodeURIComponent('not a name!'), { sku: 'C' })).toMatchObject({ status: 400, body: { code: 'INVALID_UPDATE' } })
    expect(await admin('/__tasks/runs/no-such-run/updates/add-item', { body: { sku: 'C' } })).toMatchObject({
      status: 404,
      body: { code: 'RUN_NOT_FOUND' },
    })

    // Past the request's wait, the update is pending (202), and the same id later gets its answer.
    expect(await update('slow', undefined, 'slow-1', '?timeout=1')).toMatchObject({
      status: 202,
      body: { id: 'slow-1', runId: id, name: 'slow', status: 'pending' },
    })
    await expect
      .poll(async () => (await update('slow', undefined, 'slow-1', '?timeout=1')).body, { timeout: 10_000, interval: 250 })
      .toEqual({ id: 'slow-1', runId: id, name: 'slow', status: 'completed', result: 'late' })
    expect((await waitForStatus(id, 'suspended')).suspended.waitpoint).toMatchObject({ type: 'signal', signal: 'checkout' })

    await mf.dispose()
    await start()

    // The same id gets the kept answer; the handler does not run again for it.
    expect((await update('add-item', { sku: 'B-2' }, 'u-2')).body.result).toEqual({ count: 2, items: ['A-1', 'B-2'] })
    expect(await update('add-item', { sku: 'bomb' }, 'bomb-1')).toMatchObject({ status: 422, body: { code: 'UPDATE_FAILED' } })
    // A new update is answered by a run that was given A-1 and B-2 again (and not the failed bomb).
    expect((await update('add-item', { sku: 'C-3' }, 'u-3')).body.result).toEqual({ count: 3, items: ['A-1', 'B-2', 'C-3'] })

    const listed = await admin(`/__tasks/runs/${id}/updates`)
    expect(listed.status).toBe(200)
    expect(listed.body.updates.map((u: any) => [u.id, u.name, u.status, u.error?.code])).toEqual([
      ['u-1', 'add-item', 'completed', undefined],
      ['u-2', 'add-item', 'completed', undefined],
      ['bad-1', 'add-item', 'rejected', 'VALIDATION_FAILED'],
      ['bomb-1', 'add-item', 'failed', 'UPDATE_FAILED'],
      [expect.any(String), 'remove-item', 'rejected', 'UPDATE_NOT_HANDLED'],
      ['slow-1', 'slow', 'completed', undefined],
      ['u-3', 'add-item', 'completed', undefined],
    ])

    expect((await admin(`/__tasks/runs/${id}/signals/checkout`, { body: 'card' })).status).toBe(202)
    expect(await waitForStatus(id, 'completed')).toMatchObject({ result: { items: ['A-1', 'B-2', 'C-3'], paid: 'card' } })
    expect(await update('add-item', { sku: 'D-4' }, 'u-4')).toMatchObject({ status: 409, body: { code: 'RUN_FINISHED' } })
  })

  it('a cancel that compensates undoes the steps of a run sleeping in the object, which ends cancelled', async () => {
    const started = await admin('/__tasks/jobs.trip', { body: { wait: true } })
    const id = started.body.id as string
    await waitForStatus(id, 'suspended')
    const cancelled = await admin(`/__tasks/runs/${id}/cancel?compensate=true`, { method: 'POST' })
    expect(cancelled).toMatchObject({ status: 200, body: { id, status: 'running', compensation: { reason: 'cancelled' } } })
    expect(await waitForStatus(id, 'cancelled')).toMatchObject({
      compensation: { reason: 'cancelled', status: 'completed' },
      steps: { 'compensate:flight': { kind: 'compensation', output: 'cancelled F1' } },
    })
  })
})
