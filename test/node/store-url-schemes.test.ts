// How SVC_STORE_URL's value is read: a scheme in any case names its store,
// as RFC 3986 has schemes compare, while `memory` is a word of its own,
// spelled exactly. What each store opens is in store-url.test.ts.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { SqliteRunStore, storeFromEnv } from '../../src/node.ts'

const dir = mkdtempSync(join(tmpdir(), 'svc-store-url-schemes-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

describe('SVC_STORE_URL schemes', () => {
  it.each(['SQLITE', 'Sqlite', 'FILE'])('%s:<path> opens a SqliteRunStore, as its lowercase spelling does', async (scheme) => {
    const path = join(dir, `${scheme}.db`)
    const opened = await storeFromEnv({ SVC_STORE_URL: `${scheme}:${path}` }, { defaultStore: 'memory' })
    try {
      expect(opened.store).toBeInstanceOf(SqliteRunStore)
      expect((opened.store as SqliteRunStore).path).toBe(path)
    } finally {
      await opened.close()
    }
  })

  it.each(['memory:', 'Memory', 'memory:x', 'postgres', 'sqlite'])(
    '%s names no store: the error lists every accepted value',
    async (value) => {
      const error = await storeFromEnv({ SVC_STORE_URL: value }, { defaultStore: 'memory' }).catch((e) => e)
      expect(error).toBeInstanceOf(TypeError)
      expect(error.message).toBe(
        `SVC_STORE_URL must be one of postgres://…, postgresql://…, sqlite:<path>[?shared], file:<path>[?shared] or memory (got ${JSON.stringify(value)})`,
      )
    },
  )
})
