// SVC_STORE_URL with a Postgres URL opens a PostgresRunStore that is ready
// when storeFromEnv resolves; a database that cannot be reached fails the
// start, naming the variable, instead of falling back to memory.
import { createServer } from 'node:net'
import { beforeAll, describe, expect, it } from 'vitest'
import { startSvcServer, storeFromEnv } from '../../src/node.ts'
import { PostgresRunStore } from '../../src/postgres.ts'
import { recordingLogger, task } from '../tasks/_helpers.ts'
import { createDatabase } from './_pg.ts'

let url: string
beforeAll(async () => {
  url = await createDatabase('store_url')
})

/** A port nothing listens on: bound, then released. */
async function closedPort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as { port: number }
  await new Promise<void>((resolve) => server.close(() => resolve()))
  return port
}

let down: string
beforeAll(async () => {
  down = `postgres://svc:hunter2@127.0.0.1:${await closedPort()}/svc`
})

describe('SVC_STORE_URL with Postgres', () => {
  it.each(['postgres', 'postgresql'])('%s://… opens a PostgresRunStore whose tables are made', async (scheme) => {
    const opened = await storeFromEnv({ SVC_STORE_URL: url.replace(/^postgres(ql)?:/, `${scheme}:`) }, { defaultStore: 'memory' })
    try {
      expect(opened.store).toBeInstanceOf(PostgresRunStore)
      expect(await (opened.store as PostgresRunStore).size()).toBe(0)
    } finally {
      await opened.close()
    }
  })

  it('an unreachable database fails naming SVC_STORE_URL, without its password', async () => {
    const error = await storeFromEnv({ SVC_STORE_URL: down }, { defaultStore: 'sqlite' }).catch((e) => e)
    expect(error).toBeInstanceOf(Error)
    expect(error.message).toMatch(/^SVC_STORE_URL: the Postgres run store cannot start: /)
    expect(error.message).not.toContain('hunter2')
  })

  it('startSvcServer fails at start on an unreachable database and does not listen', async () => {
    const logger = recordingLogger()
    const start = startSvcServer({
      apiRoutes: [task('jobs.noop', () => null)],
      pages: [],
      port: 0,
      env: { NODE_ENV: 'test', SVC_STORE_URL: down },
      logger,
    })
    await expect(start).rejects.toThrow(/^SVC_STORE_URL: the Postgres run store cannot start/)
  })

  it('startSvcServer keeps a run across a restart on SVC_STORE_URL=postgres://…', async () => {
    const routes = [task('jobs.hello', async (ctx) => ({ hello: ctx.input }))]
    const env = { NODE_ENV: 'test', SVC_STORE_URL: url, SVC_DISABLE_IN_PROCESS_CRON: '1' }
    const first = await startSvcServer({ apiRoutes: routes, pages: [], port: 0, env, logger: recordingLogger() })
    const { id } = await first.runtime.trigger('jobs.hello', 'pg')
    expect((await first.runtime.waitForRun(id)).ok).toBe(true)
    await first.close()
    const second = await startSvcServer({ apiRoutes: routes, pages: [], port: 0, env, logger: recordingLogger() })
    try {
      expect(second.runtime.store).toBeInstanceOf(PostgresRunStore)
      expect((await second.runtime.getRun(id))?.result).toEqual({ hello: 'pg' })
    } finally {
      await second.close()
    }
  })
})
