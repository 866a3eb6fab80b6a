/**
 * Durable Object storage written by the release before the migration chain
 * recorded a Durable Object's schema version (test/fixtures/durable-v12/:
 * three `nap` runs asleep, their sleeps long over), opened by this
 * release's build in real workerd: the object takes its tables for version
 * 12, migrates to the current version, records it, and the runs complete.
 * The fixture is the persist directory itself (about 100 KiB), committed
 * as that release left it, so what is tested is storage an earlier
 * workerd and svc wrote rather than a reconstruction of it.
 */
import { cp, mkdtemp, readdir, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import { fileURLToPath } from 'node:url'
import type { Miniflare } from 'miniflare'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { buildApp } from '../../src/build/build.ts'
import { SCHEMA_VERSION } from '../../src/runtime/tasks/sql/migrations.ts'
import { startBuiltWorker } from './_wrangler.ts'

const FIXTURE = fileURLToPath(new URL('../fixtures/durable-v12/', import.meta.url))
const SECRET = 'migrations-secret-0123456789abcdef01'

let root: string
let mf: Miniflare | undefined

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'svc-do-migrations-'))
  await cp(join(FIXTURE, 'app'), join(root, 'app'), { recursive: true })
  await cp(join(FIXTURE, 'persist'), join(root, 'persist'), { recursive: true })
  await buildApp({ root: join(root, 'app'), target: 'cloudflare' })
})
afterAll(async () => {
  await mf?.dispose()
  if (root) await rm(root, { recursive: true, force: true })
})

function start(): Promise<Miniflare> {
  return startBuiltWorker(join(root, 'app/.output/cloudflare'), { SVC_TASK_SECRET: SECRET }, join(root, 'persist'))
}

async function admin(path: string): Promise<any> {
  const res = await mf!.dispatchFetch(`http://worker${path}`, { headers: { authorization: `Bearer ${SECRET}` } })
  expect(res.status).toBe(200)
  return res.json()
}

/** The tables, indexes and recorded version of the object's SQLite file, read once workerd is stopped. */
async function storage(): Promise<{ names: string[]; version: number | undefined }> {
  const dir = join(root, 'persist/-SvcTasks')
  const [file] = (await readdir(dir)).filter((name) => name.endsWith('.sqlite') && name !== 'metadata.sqlite')
  const db = new DatabaseSync(join(dir, file), { readOnly: true })
  try {
    const names = db
      .prepare("SELECT name FROM sqlite_master WHERE name LIKE 'svc%' ORDER BY name")
      .all()
      .map((row) => String(row.name))
    const version = names.includes('svc_schema')
      ? Number((db.prepare('SELECT version FROM svc_schema').get() as { version: number }).version)
      : undefined
    return { names, version }
  } finally {
    db.close()
  }
}

it('storage of the release before versions were recorded migrates to the current version, and its sleeping runs complete', async () => {
  const before = await storage()
  expect(before.version).toBeUndefined()
  expect(before.names).toContain('svc_runs_by_task_finish')
  expect(before.names).not.toContain('svc_timers_by_run')

  mf = await start()
  const deadline = Date.now() + 20_000
  let runs: { id: string; taskName: string; status: string }[] = []
  for (;;) {
    runs = (await admin('/__tasks/runs?limit=50')).runs
    if (runs.length === 3 && runs.every((run) => run.status === 'completed')) break
    if (Date.now() > deadline) throw new Error(`the runs did not complete: ${JSON.stringify(runs)}`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  for (const { id } of runs) {
    const run = await admin(`/__tasks/${id}`)
    // Step a ran when the fixture was made, under the earlier release; b ran
    // now, after the thirty-second sleep: a ran once, before it.
    expect(run.result.b - run.result.a).toBeGreaterThanOrEqual(30_000)
    expect(run.steps).toMatchObject({ a: { status: 'completed' }, nap: { status: 'completed' }, b: { status: 'completed' } })
  }
  await mf.dispose()
  mf = undefined

  const after = await storage()
  expect(after.version).toBe(SCHEMA_VERSION)
  const search = [
    ...['svc_run_metadata', 'svc_run_metadata_by_run', 'svc_run_tags', 'svc_runs_by_created'],
    ...['svc_runs_metadata_insert', 'svc_runs_metadata_delete', 'svc_runs_tags_delete'],
    ...['svc_signals', 'svc_signals_by_id', 'svc_signals_untaken'],
    ...['svc_updates', 'svc_updates_by_run', 'svc_updates_pending'],
  ]
  expect(after.names).toEqual(
    [...before.names, 'svc_schedules', 'svc_schedules_by_key', 'svc_schema', 'svc_timers_by_run', ...search].sort(),
  )
})
