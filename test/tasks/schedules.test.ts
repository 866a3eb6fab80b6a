/** Runtime schedules (schedule-cases.ts) on the memory store and on SQLite files, one process's and a shared one's. */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll } from 'vitest'
import { SqliteRunStore } from '../../src/node.ts'
import { scheduleCases } from './schedule-cases.ts'

const dir = mkdtempSync(join(tmpdir(), 'svc-schedules-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
let files = 0

scheduleCases('the memory store')
scheduleCases('a SQLite file', () => new SqliteRunStore({ path: join(dir, `runs-${++files}.db`) }))
scheduleCases('a SQLite file several processes share', () => new SqliteRunStore({ path: join(dir, `runs-${++files}.db`), shared: true }))
