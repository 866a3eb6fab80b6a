import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, afterEach } from 'vitest'
import { SqliteRunStore } from '../../src/node.ts'
import { MemoryRunStore } from '../../src/runtime/tasks/index.ts'
import { flowStoreContract } from './flow-store-contract.ts'

const dir = mkdtempSync(join(tmpdir(), 'svc-flow-store-'))
let files = 0
const open: SqliteRunStore[] = []
function sqlite(path: string): SqliteRunStore {
  const store = new SqliteRunStore({ path })
  open.push(store)
  return store
}
afterEach(async () => {
  for (const store of open.splice(0)) await store.close()
})
afterAll(() => rmSync(dir, { recursive: true, force: true }))

flowStoreContract('MemoryRunStore', () => new MemoryRunStore())
flowStoreContract('SqliteRunStore (:memory:)', () => sqlite(':memory:'))
flowStoreContract('SqliteRunStore (file)', () => sqlite(join(dir, `runs-${++files}.db`)))
