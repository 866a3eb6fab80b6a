// A SQLite file written by the release before `svc_timers` was indexed by
// run (schema version 12), with runs asleep in it (test/fixtures/sqlite-v12/),
// opened by this release: the migration chain brings it to the current
// version, and the sleeping runs complete without a recorded step running
// again.
import { spawn, type ChildProcess } from 'node:child_process'
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import { fileURLToPath } from 'node:url'
import { afterAll, afterEach, expect, it } from 'vitest'
import { SCHEMA_VERSION } from '../../src/sqlite/database.ts'
import type { RunRecord } from '../../src/types.ts'
import { until } from '../tasks/_helpers.ts'

const FIXTURE = fileURLToPath(new URL('../fixtures/sqlite-v12/', import.meta.url))
const SECRET = 'upgrade-test-secret-0123456789abcdef'
const AUTH = { authorization: `Bearer ${SECRET}`, 'content-type': 'application/json' }

const dir = mkdtempSync(join(tmpdir(), 'svc-sqlite-migrations-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
const started: ChildProcess[] = []
afterEach(() => {
  for (const child of started.splice(0)) child.kill('SIGKILL')
})

async function startServer(db: string, effects: string): Promise<string> {
  const child = spawn(process.execPath, [join(FIXTURE, 'server.ts'), db, effects], {
    env: { ...process.env, SVC_TASK_SECRET: SECRET },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  started.push(child)
  let out = ''
  child.stdout!.on('data', (chunk) => (out += chunk))
  child.stderr!.on('data', (chunk) => (out += chunk))
  const port = await until(() => /port (\d+)/.exec(out)?.[1] ?? (child.exitCode !== null && fail(out)), 15_000)
  return `http://127.0.0.1:${port}`
}

function fail(out: string): never {
  throw new Error(`the server exited before listening:\n${out}`)
}

async function runs(base: string): Promise<RunRecord[]> {
  const response = await fetch(`${base}/__tasks/runs?limit=50`, { headers: AUTH })
  expect(response.status).toBe(200)
  return ((await response.json()) as { runs: RunRecord[] }).runs
}

async function getRun(base: string, id: string): Promise<RunRecord> {
  return (await (await fetch(`${base}/__tasks/${id}`, { headers: AUTH })).json()) as RunRecord
}

function schema(path: string): { version: number; names: string[] } {
  const db = new DatabaseSync(path, { readOnly: true })
  try {
    const version = Number((db.prepare('PRAGMA user_version').get() as { user_version: number }).user_version)
    const rows = db.prepare("SELECT name FROM sqlite_master WHERE type IN ('table', 'index') AND sql IS NOT NULL ORDER BY name").all()
    return { version, names: rows.map((row) => String(row.name)) }
  } finally {
    db.close()
  }
}

it('a version-12 file migrates to the current version, and its sleeping runs complete without a recorded step running again', async () => {
  const db = join(dir, 'runs.db')
  const effects = join(dir, 'effects.log')
  copyFileSync(join(FIXTURE, 'runs.db'), db)
  writeFileSync(effects, '')
  const before = schema(db)
  expect(before.version).toBe(12)
  expect(before.names).not.toContain('svc_timers_by_run')

  const base = await startServer(db, effects)
  // The naps' sleeps ended long ago: each wakes on the new process and runs step b, and only step b.
  const held = await until(async () => {
    const listed = await runs(base)
    return listed.filter((run) => run.taskName === 'nap' && run.status === 'completed').length === 3 ? listed : undefined
  }, 10_000)
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
  expect(after.names).toEqual([...before.names, 'svc_timers_by_run'].sort())
})
