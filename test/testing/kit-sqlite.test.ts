/** `svcjs/testing` on a SQLite file, the store `svc dev` and the built server keep runs in. */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll } from 'vitest'
import { SqliteRunStore } from '../../src/node.ts'
import { kitContract } from './kit-contract.ts'

const dir = await mkdtemp(join(tmpdir(), 'svc-kit-sqlite-'))
afterAll(() => rm(dir, { recursive: true, force: true }))

let files = 0
kitContract('a SQLite file', () => new SqliteRunStore({ path: join(dir, `runs-${++files}.db`) }))
kitContract('a SQLite file several processes share', () => new SqliteRunStore({ path: join(dir, `runs-${++files}.db`), shared: true }))
