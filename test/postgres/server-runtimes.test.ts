// The servers `svc build --target bun` and `--target deno` emit keep runs in
// the Postgres database SVC_STORE_URL names, through the `postgres` driver,
// on the runtime itself: the test process reads a run back from the database
// with its own PostgresRunStore, the server makes no .svc/runs.db, and a run
// outlives a kill -9 of its server, finishing on the next process without
// its recorded step running again.
import { existsSync } from 'node:fs'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import postgres from 'postgres'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { PostgresRunStore } from '../../src/postgres.ts'
import { redactUrl } from '../../src/runtime/redact.ts'
import type { RunRecord } from '../../src/types.ts'
import { until } from '../tasks/_helpers.ts'
import { builtOnce } from '../targets/_app.ts'
import { type BuiltServer, type ServerRuntime, startBuilt, stop } from '../targets/_server-runtime.ts'
import { TASK_SECRET } from '../targets/contract.ts'
import { createDatabase } from './_pg.ts'

const AUTH = { authorization: `Bearer ${TASK_SECRET}` }
const RUNTIMES: ServerRuntime[] = ['bun', 'deno']

for (const runtime of RUNTIMES) {
  describe(`the server built for ${runtime}, with SVC_STORE_URL=postgres://…`, () => {
    // jobs.nap of the web-server-app: step a, whose body appends a line to
    // EFFECTS_LOG each time it runs, then ctx.step.sleep('nap', 1).
    const built = builtOnce(runtime, 'web-server-app')
    const serverFile = async () => join((await built()).root, `.output/${runtime}`, 'server.mjs')

    // The servers' working directory, where the default store would make .svc/runs.db.
    let dir: string
    beforeAll(async () => {
      dir = await mkdtemp(join(tmpdir(), `svc-${runtime}-postgres-`))
      await built()
    })
    afterAll(() => rm(dir, { recursive: true, force: true }))

    const servers: BuiltServer[] = []
    const closers: Array<() => Promise<void>> = []
    afterEach(async () => {
      for (const server of servers.splice(0)) await stop(server)
      for (const close of closers.splice(0)) await close()
    })

    /**
     * A fresh database, the test process's own store on it and a plain
     * connection (for what the store does not show), and an empty log of
     * step executions.
     */
    const fresh = async (name: string) => {
      const url = await createDatabase(`${runtime}_${name}`)
      const store = new PostgresRunStore({ url })
      const db = postgres(url, { onnotice: () => {} })
      closers.push(
        () => store.close(),
        () => db.end(),
      )
      const effects = join(dir, `${name}.log`)
      await writeFile(effects, '')
      return { url, store, db, effects }
    }
    const start = async (url: string, effects: string) => {
      const server = await startBuilt(
        runtime,
        await serverFile(),
        { NODE_ENV: 'production', SVC_TASK_SECRET: TASK_SECRET, SVC_STORE_URL: url, EFFECTS_LOG: effects },
        { cwd: dir },
      )
      servers.push(server)
      return server
    }
    const trigger = async (server: BuiltServer) => {
      const res = await fetch(`${server.base}/__tasks/jobs.nap`, {
        method: 'POST',
        headers: { ...AUTH, 'content-type': 'application/json' },
        body: '{}',
      })
      expect(res.status).toBe(202)
      return ((await res.json()) as { id: string }).id
    }
    const getRun = async (server: BuiltServer, id: string) =>
      (await (await fetch(`${server.base}/__tasks/${id}`, { headers: AUTH })).json()) as RunRecord
    const completed = (server: BuiltServer, id: string) =>
      until(async () => {
        const run = await getRun(server, id)
        return run.status === 'completed' && run
      }, 10_000)
    /** The executions of step a's body for run `id`, as `nap-a <run id> <pid>` lines. */
    const executions = async (effects: string, id: string) =>
      (await readFile(effects, 'utf8')).split('\n').filter((line) => line.startsWith(`nap-a ${id} `))

    it('keeps a run in the database, where the test process reads it as the server answers it, and makes no .svc/runs.db', async () => {
      const { url, store, effects } = await fresh('kept')
      const server = await start(url, effects)
      expect(server.output()).toContain(`svc runs: Postgres ${redactUrl(url)}`)

      const id = await trigger(server)
      const run = await completed(server, id)
      expect(run).toMatchObject({ status: 'completed', result: { a: 'A', finishedBy: server.child.pid } })

      const stored = await store.getRun(id)
      expect(stored).toMatchObject({
        id,
        taskName: 'jobs.nap',
        status: 'completed',
        result: { a: 'A', finishedBy: server.child.pid },
        steps: { a: { status: 'completed' }, nap: { status: 'completed' } },
      })
      expect(existsSync(join(dir, '.svc/runs.db'))).toBe(false)
      expect(await executions(effects, id)).toEqual([`nap-a ${id} ${server.child.pid}`])
    })

    it('finishes a run on the next process after a kill -9 during its sleep, without running its recorded step again', async () => {
      const { url, store, db, effects } = await fresh('killed')
      const first = await start(url, effects)
      const id = await trigger(first)
      // Killed once the attempt is over: the run is written suspended, its
      // sleep's timer saved, and only then does its process give the run's
      // lease back. A process killed before that leaves the lease to lapse
      // (leaseMs, 30 s by default) before another may run the run: a case of
      // its own, not this one.
      await until(async () => {
        const [row] = await db`SELECT status, lease_owner FROM svc.runs WHERE id = ${id}`
        return row?.status === 'suspended' && row.lease_owner === null
      }, 10_000)
      expect(await stop(first)).toBe('SIGKILL')

      // What the database held when the process died: step a recorded, the sleep not over.
      expect(await store.getRun(id)).toMatchObject({ status: 'suspended', steps: { a: { status: 'completed', output: 'A' } } })
      expect((await store.getRun(id))!.steps.nap?.status).not.toBe('completed')
      expect((await store.listTimers()).map((timer) => timer.runId)).toEqual([id])

      const second = await start(url, effects)
      const run = await completed(second, id)
      expect(run).toMatchObject({ result: { a: 'A', finishedBy: second.child.pid } })
      expect(await store.getRun(id)).toMatchObject({
        status: 'completed',
        result: { a: 'A', finishedBy: second.child.pid },
        steps: { a: { status: 'completed' }, nap: { status: 'completed' } },
      })
      // Step a's body ran once, in the first process: the second took its recorded output.
      expect(await executions(effects, id)).toEqual([`nap-a ${id} ${first.child.pid}`])
      expect(existsSync(join(dir, '.svc/runs.db'))).toBe(false)
    })
  })
}
