// A Postgres schema written by an earlier release, with runs asleep in it,
// opened by this release: the migration chain brings it to the current
// version, and the sleeping runs complete without a recorded step running
// again.
//
// The database is the release's own: test/fixtures/postgres-v12/runs.sql
// is a pg_dump (plain SQL, schema and data) of what the code of the last
// release at schema version 12 wrote, made by generate.ts on that code,
// so this test needs no old code to restore it. Version 12 is the one
// before this release's changes: versions 13 (run_counts in shards, moving
// the counts over) and 14 came in together, and no release wrote 13.
import { readFileSync } from 'node:fs'
import postgres from 'postgres'
import { afterEach, beforeAll, expect, it } from 'vitest'
import { PostgresRunStore } from '../../src/postgres.ts'
import { SCHEMA_VERSION } from '../../src/postgres/migrations.ts'
import { createTaskRuntime } from '../../src/runtime/tasks/index.ts'
import type { TaskRuntime } from '../../src/types.ts'
import { fixtureRoutes } from '../fixtures/postgres-v12/tasks.ts'
import { until } from '../tasks/_helpers.ts'
import { createDatabase } from './_pg.ts'

const DUMP = readFileSync(new URL('../fixtures/postgres-v12/runs.sql', import.meta.url), 'utf8')

let url: string
beforeAll(async () => {
  url = await createDatabase('migrations_forward')
  // One connection: the dump empties its search_path.
  const sql = postgres(url, { max: 1, onnotice: () => {} })
  try {
    await sql.unsafe(DUMP)
  } finally {
    await sql.end()
  }
})

const opened: { runtime: TaskRuntime; store: PostgresRunStore }[] = []
afterEach(async () => {
  for (const { runtime, store } of opened.splice(0)) {
    await runtime.close()
    await store.close()
  }
})

interface Schema {
  versions: number[]
  indexes: string[]
  /** The run_counts rows summed: each version keeps the counts in its own shape. */
  counts: { live: number; total: number }
}

async function readSchema(): Promise<Schema> {
  const sql = postgres(url, { max: 1, onnotice: () => {} })
  try {
    const versions = await sql<{ version: number }[]>`SELECT version FROM svc.migrations ORDER BY version`
    const indexes = await sql<{ indexname: string }[]>`SELECT indexname FROM pg_indexes WHERE schemaname = 'svc' ORDER BY indexname`
    const [counts] = await sql<
      { live: number; total: number }[]
    >`SELECT sum(live)::int AS live, sum(total)::int AS total FROM svc.run_counts`
    return { versions: versions.map((row) => row.version), indexes: indexes.map((row) => row.indexname), counts }
  } finally {
    await sql.end()
  }
}

const upTo = (version: number) => Array.from({ length: version }, (_, i) => i + 1)

it('a version-12 schema migrates to the current version, and its sleeping runs complete without a recorded step running again', async () => {
  const before = await readSchema()
  expect(before.versions).toEqual(upTo(12))
  expect(before.indexes).not.toContain('runs_queued_by_weight')
  // One hello run finished, three naps asleep.
  expect(before.counts).toEqual({ live: 3, total: 4 })

  const ran: string[] = []
  const problems: unknown[][] = []
  const store = new PostgresRunStore({ url, pollMs: 50 })
  const runtime = createTaskRuntime({
    routes: fixtureRoutes((runId, step) => {
      ran.push(`${runId} ${step}`)
      return step.toUpperCase()
    }),
    store,
    logger: { info() {}, warn: (...args) => problems.push(args), error: (...args) => problems.push(args) },
    // The hello run finished when the dump was made; kept, whatever the dump's age.
    retention: false,
  })
  opened.push({ runtime, store })
  await runtime.recover()

  // The naps' thirty-second sleeps ended long ago: each wakes here and runs step b, and only step b.
  const naps = await until(async () => {
    const done = await store.listRuns({ taskName: 'nap', status: 'completed' })
    return done.length === 3 && done
  }, 15_000)
  for (const run of naps) {
    expect(run.result).toEqual({ a: 'NAP-A', b: 'NAP-B' })
    expect(Object.keys(run.steps).sort()).toEqual(['a', 'b', 'nap'])
  }
  expect(ran.sort()).toEqual(naps.map((run) => `${run.id} nap-b`).sort())
  const hello = await store.listRuns({ taskName: 'hello' })
  expect(hello.map((run) => [run.status, run.result])).toEqual([['completed', { a: 'HELLO-A' }]])
  expect(problems).toEqual([])

  const after = await readSchema()
  expect(after.versions).toEqual(upTo(SCHEMA_VERSION))
  expect(after.indexes).toContain('runs_queued_by_weight')
  // The counts moved to the shards whole, and the naps that finished since left the live ones.
  expect(after.counts).toEqual({ live: 0, total: 4 })
})
