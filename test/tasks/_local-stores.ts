/**
 * The stores of one machine a suite of cases runs on: the kit's memory
 * store (no store given), a SQLite file, and a SQLite file several
 * processes share, each case on a file of its own, removed after the file.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll } from 'vitest'
import { SqliteRunStore } from '../../src/node.ts'
import type { RunStore, StoreLifecycle } from '../../src/runtime/types/run-store.ts'

/** What a suite of cases takes: the store's name, and what makes a store for each case (none: the memory store). */
export type StoreCases = (name: string, makeStore?: () => RunStore & StoreLifecycle) => void

/** Runs `cases` on the memory store and on SQLite files, one process's and a shared one's. */
export function onLocalStores(prefix: string, cases: StoreCases): void {
  const dir = mkdtempSync(join(tmpdir(), `svc-${prefix}-`))
  afterAll(() => rmSync(dir, { recursive: true, force: true }))
  let files = 0
  cases('the memory store')
  cases('a SQLite file', () => new SqliteRunStore({ path: join(dir, `runs-${++files}.db`) }))
  cases('a SQLite file several processes share', () => new SqliteRunStore({ path: join(dir, `runs-${++files}.db`), shared: true }))
}
