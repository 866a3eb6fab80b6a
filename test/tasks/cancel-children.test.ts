/** Cancellation that reaches children (cancel-children-cases.ts) on the memory store and on SQLite files, one process's and a shared one's. */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll } from 'vitest'
import { SqliteRunStore } from '../../src/node.ts'
import { cancelChildrenCases } from './cancel-children-cases.ts'

const dir = mkdtempSync(join(tmpdir(), 'svc-cancel-children-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
let files = 0

cancelChildrenCases('the memory store')
cancelChildrenCases('a SQLite file', () => new SqliteRunStore({ path: join(dir, `runs-${++files}.db`) }))
cancelChildrenCases(
  'a SQLite file several processes share',
  () => new SqliteRunStore({ path: join(dir, `runs-${++files}.db`), shared: true }),
)
