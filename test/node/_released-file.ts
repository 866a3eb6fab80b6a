// A SQLite file that an earlier release wrote (a fixture under
// test/fixtures/sqlite-v<N>/, with the server that made it), copied to a
// temporary folder and served by this release, with the helpers the
// upgrade tests read it through.
import { spawn, type ChildProcess } from 'node:child_process'
import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import { fileURLToPath } from 'node:url'
import { afterAll, afterEach, expect } from 'vitest'
import type { RunRecord } from '../../src/types.ts'
import { until } from '../tasks/_helpers.ts'

const SECRET = 'upgrade-test-secret-0123456789abcdef'
export const AUTH = { authorization: `Bearer ${SECRET}`, 'content-type': 'application/json' }

export interface ReleasedFile {
  /** The copy of the fixture's `runs.db`. */
  db: string
  /** The file the fixture's tasks append a line to for each step whose function runs. */
  effects: string
  /** Starts the fixture's server on the copy; resolves with its base URL. */
  start(): Promise<string>
}

/** The fixture `test/fixtures/<fixture>/`, copied once the test asks for it; its servers are killed after each test. */
export function releasedFile(fixture: string): () => ReleasedFile {
  const from = fileURLToPath(new URL(`../fixtures/${fixture}/`, import.meta.url))
  const dir = mkdtempSync(join(tmpdir(), `svc-${fixture}-`))
  afterAll(() => rmSync(dir, { recursive: true, force: true }))
  const started: ChildProcess[] = []
  afterEach(() => {
    for (const child of started.splice(0)) child.kill('SIGKILL')
  })
  return () => {
    const db = join(dir, 'runs.db')
    const effects = join(dir, 'effects.log')
    copyFileSync(join(from, 'runs.db'), db)
    writeFileSync(effects, '')
    const start = async () => {
      const child = spawn(process.execPath, [join(from, 'server.ts'), db, effects], {
        // The fixture's finished runs are kept, however long ago it was made (7 days is the default retention).
        env: { ...process.env, SVC_TASK_SECRET: SECRET, SVC_RETENTION: 'off' },
        stdio: ['ignore', 'pipe', 'pipe'],
      })
      started.push(child)
      let out = ''
      child.stdout!.on('data', (chunk) => (out += chunk))
      child.stderr!.on('data', (chunk) => (out += chunk))
      const port = await until(() => /port (\d+)/.exec(out)?.[1] ?? (child.exitCode !== null && exited(out)), 15_000)
      return `http://127.0.0.1:${port}`
    }
    return { db, effects, start }
  }
}

function exited(out: string): never {
  throw new Error(`the server exited before listening:\n${out}`)
}

export async function runs(base: string): Promise<RunRecord[]> {
  const response = await fetch(`${base}/__tasks/runs?limit=50`, { headers: AUTH })
  expect(response.status).toBe(200)
  return ((await response.json()) as { runs: RunRecord[] }).runs
}

/** The runs the server lists, once the fixture's three `nap` runs have completed. */
export function napsCompleted(base: string): Promise<RunRecord[]> {
  return until(async () => {
    const listed = await runs(base)
    return listed.filter((run) => run.taskName === 'nap' && run.status === 'completed').length === 3 ? listed : undefined
  }, 10_000)
}

export async function getRun(base: string, id: string): Promise<RunRecord> {
  return (await (await fetch(`${base}/__tasks/${id}`, { headers: AUTH })).json()) as RunRecord
}

/** The file's schema version and the names of its tables and indexes. */
export function schema(path: string): { version: number; names: string[] } {
  const db = new DatabaseSync(path, { readOnly: true })
  try {
    const version = Number((db.prepare('PRAGMA user_version').get() as { user_version: number }).user_version)
    const rows = db.prepare("SELECT name FROM sqlite_master WHERE type IN ('table', 'index') AND sql IS NOT NULL ORDER BY name").all()
    return { version, names: rows.map((row) => String(row.name)) }
  } finally {
    db.close()
  }
}
