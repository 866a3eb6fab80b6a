/**
 * A run id names the shard that holds its run, and a caller chooses the
 * id it asks about: an id that names a shard the app does not have is an
 * unknown run, answered 404 by the worker without reaching, and so
 * without creating, a tasks Durable Object. Real workerd, with the
 * objects persisted, so each object created shows as a file.
 */
import { mkdtemp, readdir, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { runIdShard } from '../../src/runtime/tasks/base/ids.ts'
import { buildWithShards, type ShardWorker, shardApp, shardWorker } from './_shards.ts'

const SHARDS = 2

/** `id` with its shard bits set to `shard`. */
function onShard(id: string, shard: number): string {
  return `${id.slice(0, 15)}${shard.toString(16).padStart(3, '0')}${id.slice(18)}`
}

describe('cloudflare with 2 shards: run ids that name a shard past the count', () => {
  let app: Awaited<ReturnType<typeof shardApp>>
  let persist: string
  let worker: ShardWorker

  beforeAll(async () => {
    app = await shardApp(SHARDS)
    const out = await buildWithShards(app.root, SHARDS)
    persist = await mkdtemp(join(tmpdir(), 'svc-shard-ids-'))
    worker = await shardWorker(out, persist)
  })
  afterAll(async () => {
    await worker?.mf.dispose()
    await app?.cleanup()
    if (persist) await rm(persist, { recursive: true, force: true })
  })

  /** The tasks objects workerd has created: one SQLite file each, beside its metadata. */
  async function objects(): Promise<string[]> {
    const files = await readdir(persist, { recursive: true })
    return files.filter((file) => file.endsWith('.sqlite') && !file.endsWith('metadata.sqlite')).sort()
  }

  it('answers 404 RUN_NOT_FOUND for them, and creates no object', async () => {
    const { body: run } = await worker.admin('/__tasks/jobs.plain', { body: { n: 1 } })
    expect(runIdShard(run.id)).toBeLessThan(SHARDS)
    // Both shards' objects exist (a listing asks each), so any new file is an object the requests below created.
    expect((await worker.admin('/__tasks/runs?limit=1')).status).toBe(200)
    const before = await objects()
    expect(before).toHaveLength(SHARDS)

    for (const shard of [SHARDS, 63, 0xfff]) {
      const id = onShard(run.id, shard)
      expect(runIdShard(id)).toBe(shard)
      for (const path of [`/__tasks/${id}`, `/__tasks/runs/${id}`, `/__tasks/runs/${id}/logs`]) {
        expect(await worker.admin(path)).toMatchObject({ status: 404, body: { code: 'RUN_NOT_FOUND' } })
      }
      for (const verb of ['cancel', 'replay']) {
        expect(await worker.admin(`/__tasks/runs/${id}/${verb}`, { method: 'POST', body: {} })).toMatchObject({
          status: 404,
          body: { code: 'RUN_NOT_FOUND' },
        })
      }
      expect(await worker.admin(`/__tasks/tokens/${id}:approve`, { body: { ok: true } })).toMatchObject({
        status: 404,
        body: { code: 'TOKEN_NOT_FOUND' },
      })
    }
    expect(await objects()).toEqual(before)
  })

  it('still reaches a run of an existing shard by its id', async () => {
    const { body } = await worker.admin('/__tasks/jobs.plain', { body: { n: 2 } })
    expect(await worker.until(body.id, (run) => run.status === 'completed')).toMatchObject({ result: { n: 2 } })
  })
})
