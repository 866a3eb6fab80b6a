/** Deadlines (deadline-cases.ts) on the memory store and on SQLite files, one process's and a shared one's. */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll } from 'vitest'
import { SqliteRunStore } from '../../src/node.ts'
import { deadlineCases } from './deadline-cases.ts'

const dir = mkdtempSync(join(tmpdir(), 'svc-deadline-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
let files = 0

deadlineCases('the memory store')
deadlineCases('a SQLite file', () => new SqliteRunStore({ path: join(dir, `runs-${++files}.db`) }))
deadlineCases('a SQLite file several processes share', () => new SqliteRunStore({ path: join(dir, `runs-${++files}.db`), shared: true }))
