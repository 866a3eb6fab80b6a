// A SQLite file written by the release before `svc_timers` was indexed by
// run (schema version 12), with runs asleep in it (test/fixtures/sqlite-v12/),
// opened by this release: the migration chain brings it to the current
// version, and the sleeping runs complete without a recorded step running
// again.
import { readFileSync } from 'node:fs'
import { expect, it } from 'vitest'
import { SCHEMA_VERSION } from '../../src/sqlite/database.ts'
import { getRun, napsCompleted, releasedFile, schema } from './_released-file.ts'

const file = releasedFile('sqlite-v12')

it('a version-12 file migrates to the current version, and its sleeping runs complete without a recorded step running again', async () => {
  const { db, effects, start } = file()
  const before = schema(db)
  expect(before.version).toBe(12)
  expect(before.names).not.toContain('svc_timers_by_run')

  const base = await start()
  // The naps' sleeps ended long ago: each wakes on the new process and runs step b, and only step b.
  const held = await napsCompleted(base)
  expect(held.map((run) => `${run.taskName}:${run.status}`).sort()).toEqual([
    'hello:completed',
    'nap:completed',
    'nap:completed',
    'nap:completed',
  ])
  const naps = await Promise.all(held.filter((run) => run.taskName === 'nap').map((run) => getRun(base, run.id)))
  expect(naps.map((run) => run.result)).toEqual(Array(3).fill({ a: 'NAP-A', b: 'NAP-B' }))
  expect(readFileSync(effects, 'utf8').split('\n').filter(Boolean)).toEqual(['nap-b', 'nap-b', 'nap-b'])

  const after = schema(db)
  expect(after.version).toBe(SCHEMA_VERSION)
  const search = ['svc_run_metadata', 'svc_run_metadata_by_run', 'svc_run_tags', 'svc_runs_by_created']
  const signals = ['svc_signals', 'svc_signals_by_id', 'svc_signals_untaken']
  const updates = ['svc_updates', 'svc_updates_by_run', 'svc_updates_pending']
  expect(after.names).toEqual(
    [...before.names, 'svc_schedules', 'svc_schedules_by_key', 'svc_timers_by_run', ...search, ...signals, ...updates].sort(),
  )
})
