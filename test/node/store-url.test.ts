// SVC_STORE_URL picks the run store without code: each accepted form opens
// the store it names, a malformed value is a TypeError naming the variable,
// and startSvcServer reads it when no store is given.
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import { SqliteRunStore, startSvcServer, storeFromEnv, type StoreFromEnv, type SvcServer } from '../../src/node.ts'
import { MemoryRunStore } from '../../src/runtime/tasks/store/memory-store.ts'
import { recordingLogger, task } from '../tasks/_helpers.ts'

const dir = mkdtempSync(join(tmpdir(), 'svc-store-url-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
let dirs = 0
const freshDir = () => join(dir, `app${++dirs}`)

const opened: StoreFromEnv[] = []
async function open(value: string | undefined, options: Parameters<typeof storeFromEnv>[1] = { defaultStore: 'memory' }) {
  const result = await storeFromEnv({ SVC_STORE_URL: value }, options)
  opened.push(result)
  return result
}
afterEach(async () => {
  for (const result of opened.splice(0)) await result.close()
})

describe('storeFromEnv', () => {
  it('sqlite:<relative path> opens a SqliteRunStore under root, making its folder', async () => {
    const root = freshDir()
    const { store } = await open('sqlite:data/runs.db', { root, defaultStore: 'memory' })
    expect(store).toBeInstanceOf(SqliteRunStore)
    expect((store as SqliteRunStore).path).toBe(join(root, 'data/runs.db'))
    expect(existsSync(join(root, 'data/runs.db'))).toBe(true)
  })

  it('sqlite:<absolute path> and file:<path> open a SqliteRunStore at that path', async () => {
    const absolute = join(freshDir(), 'nested', 'a.db')
    expect(((await open(`sqlite:${absolute}`)).store as SqliteRunStore).path).toBe(absolute)
    const plain = join(freshDir(), 'b.db')
    expect(((await open(`file:${plain}`)).store as SqliteRunStore).path).toBe(plain)
    const url = join(freshDir(), 'with space', 'c.db')
    expect(((await open(pathToFileURL(url).href)).store as SqliteRunStore).path).toBe(url)
    expect(existsSync(url)).toBe(true)
  })

  it('?shared opens the file shared by processes, with the options the query names', async () => {
    const path = join(freshDir(), 'runs.db')
    const opened = await open(`sqlite:${path}?shared`)
    expect(opened.description).toBe(`SQLite ${path} (shared by processes)`)
    expect((opened.store as SqliteRunStore).shared).toMatchObject({ leaseMs: 30_000, pollMs: 1000 })
    const tuned = (await open(`${pathToFileURL(path).href}?shared=1&leaseMs=5000&pollMs=200`)).store as SqliteRunStore
    expect([tuned.path, tuned.shared?.leaseMs, tuned.shared?.pollMs]).toEqual([path, 5000, 200])
    expect(((await open(`sqlite:${join(freshDir(), 'plain.db')}?shared=false`)).store as SqliteRunStore).shared).toBeUndefined()
  })

  it.each([
    ['?shard', /unknown SQLite option "shard"; accepted: shared, leaseMs, pollMs, busyTimeoutMs, maxRuns/],
    ['?shared=yes', /shared must be true, false, 1 or 0 \(got "yes"\)/],
    ['?shared&leaseMs=soon', /leaseMs must be a whole number, 1 or more \(got NaN\)/],
  ])('sqlite:<path>%s fails naming SVC_STORE_URL and the option', async (query, message) => {
    const error = await storeFromEnv({ SVC_STORE_URL: `sqlite:${join(freshDir(), 'x.db')}${query}` }, { defaultStore: 'memory' }).catch(
      (e) => e,
    )
    expect(error.message).toMatch(/^SVC_STORE_URL/)
    expect(error.message).toMatch(message)
  })

  it('memory opens a MemoryRunStore', async () => {
    expect((await open('memory')).store).toBeInstanceOf(MemoryRunStore)
  })

  it('without the variable, the default: memory, or a SQLite file at .svc/runs.db under root', async () => {
    expect((await open(undefined)).store).toBeInstanceOf(MemoryRunStore)
    expect((await open('')).store).toBeInstanceOf(MemoryRunStore)
    const root = freshDir()
    const { store } = await open(undefined, { root, defaultStore: 'sqlite' })
    expect((store as SqliteRunStore).path).toBe(join(root, '.svc/runs.db'))
    expect(existsSync(join(root, '.svc/runs.db'))).toBe(true)
  })

  it.each(['mysql://x', 'nonsense', 'redis://localhost:6379'])(
    '%s is a TypeError naming SVC_STORE_URL and what it accepts',
    async (value) => {
      const error = await storeFromEnv({ SVC_STORE_URL: value }, { defaultStore: 'sqlite', root: freshDir() }).catch((e) => e)
      expect(error).toBeInstanceOf(TypeError)
      expect(error.message).toMatch(
        /^SVC_STORE_URL must be one of postgres:\/\/…, postgresql:\/\/…, sqlite:<path>\[\?shared\], file:<path>\[\?shared\] or memory/,
      )
      expect(error.message).toContain(`(got "${value}")`)
    },
  )

  it.each(['sqlite:', 'file:', 'sqlite:  '])('%s (no file) is a TypeError naming SVC_STORE_URL', async (value) => {
    const error = await storeFromEnv({ SVC_STORE_URL: value }, { defaultStore: 'memory' }).catch((e) => e)
    expect(error).toBeInstanceOf(TypeError)
    expect(error.message).toMatch(/^SVC_STORE_URL must name a file after "(sqlite|file):"/)
  })

  it('a malformed value never prints the password it holds', async () => {
    const error = await storeFromEnv({ SVC_STORE_URL: 'mysql://user:hunter2@db/app' }, { defaultStore: 'memory' }).catch((e) => e)
    expect(error.message).toContain('SVC_STORE_URL')
    expect(error.message).not.toContain('hunter2')
  })

  it('a SQLite file that cannot be made fails naming the variable and the path', async () => {
    // A path under a regular file: its folder can never be made.
    const root = freshDir()
    await open(undefined, { root, defaultStore: 'sqlite' })
    const error = await storeFromEnv(
      { SVC_STORE_URL: `sqlite:${join(root, '.svc/runs.db/inner/x.db')}` },
      { defaultStore: 'memory' },
    ).catch((e) => e)
    expect(error).toBeInstanceOf(Error)
    expect(error.message).toMatch(/^SVC_STORE_URL: cannot open the SQLite run store at .*inner/)
  })
})

describe('startSvcServer and SVC_STORE_URL', () => {
  const servers: SvcServer[] = []
  afterEach(async () => {
    for (const server of servers.splice(0)) await server.close()
  })

  const routes = [task('jobs.hello', async (ctx) => ({ hello: ctx.input }))]
  async function start(env: Record<string, string | undefined>, extra: Partial<Parameters<typeof startSvcServer>[0]> = {}) {
    const server = await startSvcServer({
      apiRoutes: routes,
      pages: [],
      port: 0,
      env: { NODE_ENV: 'test', ...env },
      logger: recordingLogger(),
      ...extra,
    })
    servers.push(server)
    return server
  }

  it('keeps a run across a restart on SVC_STORE_URL=sqlite:<file>', async () => {
    const env = { SVC_STORE_URL: `sqlite:${join(freshDir(), 'runs.db')}` }
    const first = await start(env)
    expect(first.runtime.store).toBeInstanceOf(SqliteRunStore)
    const { id: runId } = await first.runtime.trigger('jobs.hello', 'world')
    expect((await first.runtime.waitForRun(runId)).ok).toBe(true)
    await first.close()

    const second = await start(env)
    const run = await second.runtime.getRun(runId)
    expect(run?.status).toBe('completed')
    expect(run?.result).toEqual({ hello: 'world' })
  })

  it('closes the store it opened when it closes', async () => {
    const server = await start({ SVC_STORE_URL: `sqlite:${join(freshDir(), 'runs.db')}` })
    const store = server.runtime.store
    await server.close()
    await expect(store.getRun('x')).rejects.toThrow(/is closed/)
  })

  it('the store option wins over SVC_STORE_URL, and the server leaves it open', async () => {
    const store = new MemoryRunStore()
    const server = await start({ SVC_STORE_URL: 'nonsense' }, { store })
    expect(server.runtime.store).toBe(store)
  })

  it('without the store option or the variable, runs live in memory', async () => {
    expect((await start({})).runtime.store).toBeInstanceOf(MemoryRunStore)
  })

  it('a malformed SVC_STORE_URL fails the start', async () => {
    await expect(start({ SVC_STORE_URL: 'mysql://x' })).rejects.toThrow(/^SVC_STORE_URL must be one of/)
  })
})
