/**
 * One engine across processes: several servers share one store, as they
 * would behind a load balancer, and split the work through `store.shared`
 * (`SharedWork`, src/runtime/types/run-store.ts). Every store that
 * processes share runs it:
 *
 * ```ts
 * processesContract('SomeStore', async () => ({ runs, effects, store, ran, unfinished, close }))
 * ```
 *
 * Each server is a real child process of test/fixtures/cluster/server.ts.
 * Side effects are counted in an `effects` table the harness made, so the
 * test sees every execution of every step in every process, including one
 * that was killed. The suite works on one store throughout, as a cluster
 * does: each case looks only at the runs of its own tasks.
 */
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { RunStore } from '../../src/runtime/tasks/store/store.ts'
import type { RunChange, RunRecord } from '../../src/types.ts'
import { type ChildServer, startChild } from './_child-server.ts'
import { until } from './_helpers.ts'

const SCRIPT = fileURLToPath(new URL('../fixtures/cluster/server.ts', import.meta.url))
const LEASE_MS = 1500
/** The servers' `SVC_TASK_SECRET`, for the tests that call their admin surface. */
const SECRET = 'cluster-secret-0123456789abcdef0123'

/** One execution of a step body: a row of the `effects` table. */
export interface Effect {
  run_id: string
  step: string
  pid: number
}

/** The store the servers share, as one store's harness opens it for the suite. */
export interface ProcessesCluster {
  /** Where the servers keep their runs: a Postgres URL or a SQLite file (test/fixtures/cluster/_stores.ts). */
  runs: string
  /** Where the servers record effects, in the same way: it holds an empty `effects (run_id, step, pid)` table. */
  effects: string
  /** A connection of the test's own to the store. */
  store: Pick<RunStore, 'getRun' | 'listRuns'>
  /** Every effect recorded so far, by any process. */
  ran(): Promise<Effect[]>
  /** The runs not completed and the timers, with their leases and claims: why a wait for them timed out. */
  unfinished(): Promise<string>
  close(): Promise<void>
}

interface ServerOptions {
  leaseMs?: number
  pollMs?: number
  /** Run the in-process cron scheduler (off unless a test is about it). */
  cron?: boolean
  /** The version of the app's code the server serves (`SVC_VERSION`). */
  version?: string
}

const recorded = (run: RunRecord) => ['a', 'b', 'c'].filter((key) => run.steps[key]?.status === 'completed')

export function processesContract(name: string, setup: () => Promise<ProcessesCluster>): void {
  describe(`one engine across processes on ${name}`, () => {
    let cluster: ProcessesCluster
    let store: ProcessesCluster['store']
    beforeAll(async () => {
      cluster = await setup()
      store = cluster.store
    })
    afterAll(() => cluster?.close())

    function startServer({ leaseMs = LEASE_MS, pollMs = 200, cron = false, version }: ServerOptions = {}): Promise<ChildServer> {
      return startChild(SCRIPT, [cluster.runs, cluster.effects, String(leaseMs), String(pollMs)], {
        ...process.env,
        SVC_DISABLE_IN_PROCESS_CRON: cron ? '' : '1',
        SVC_TASK_SECRET: SECRET,
        SVC_VERSION: version ?? '',
      })
    }

    /** `GET /__tasks/events` of `server`: the changes it streams, as they come, until `close`. */
    async function runEvents(server: ChildServer): Promise<{ changes: RunChange[]; close(): void }> {
      const port = await server.call<number>('port')
      const abort = new AbortController()
      const response = await fetch(`http://127.0.0.1:${port}/__tasks/events`, {
        headers: { authorization: `Bearer ${SECRET}` },
        signal: abort.signal,
      })
      expect(response.status).toBe(200)
      const changes: RunChange[] = []
      const read = async () => {
        const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader()
        let text = ''
        for (;;) {
          const { done, value } = await reader.read()
          if (done) return
          text += value
          let end: number
          while ((end = text.indexOf('\n\n')) >= 0) {
            for (const line of text.slice(0, end).split('\n')) if (line.startsWith('data:')) changes.push(JSON.parse(line.slice(5)))
            text = text.slice(end + 2)
          }
        }
      }
      // Ends with an AbortError when the test closes the stream.
      read().catch(() => {})
      return { changes, close: () => abort.abort() }
    }

    /** The effects recorded so far that match `where` in every field it names. */
    async function effects(where: Partial<Effect> = {}): Promise<Effect[]> {
      const fields = Object.entries(where) as [keyof Effect, unknown][]
      return (await cluster.ran()).filter((row) => fields.every(([field, value]) => row[field] === value))
    }

    it('an event send killed after recording the event, or after meeting a wait, is finished by sending its id again on another process: each task starts once, each wait resumes once', async () => {
      const [a, b, c] = await Promise.all([startServer(), startServer(), startServer()])
      const gone = (pid: number) =>
        until(() => {
          try {
            process.kill(pid, 0)
            return false
          } catch {
            return true
          }
        })
      const suspended = (id: string) => until(async () => (await store.getRun(id))?.status === 'suspended', 15_000)
      const completed = (id: string) =>
        until(async () => {
          const run = await store.getRun(id)
          return run?.status === 'completed' && run
        }, 15_000)

      // Each send goes once the wait took both its looks at recorded events,
      // so it is the send, not the wait's own look, that finds the other.
      const armed = async (id: string, looked: number) => {
        await suspended(id)
        await until(async () => (await b.call<number>('looks')) >= looked + 2, 15_000)
      }

      // Killed once the event is recorded: nothing started, nothing resumed.
      const lookedFirst = await b.call<number>('looks')
      const first = await b.call<string>('trigger', { task: 'paid.await', payload: { order: 'o-1' } })
      await armed(first, lookedFirst)
      a.call('send', { name: 'crash.paid', data: { order: 'o-1', crash: 'after-record' }, eventId: 'evt-1' }).catch(() => {})
      await gone(a.pid)
      expect((await store.getRun(first))?.status).toBe('suspended')
      const resent = await b.call<{ runs: { id: string }[]; resumed: string[] }>('send', {
        name: 'crash.paid',
        data: { order: 'o-1', crash: 'after-record' },
        eventId: 'evt-1',
      })
      expect(resent.resumed).toEqual([first])

      // Killed once the wait's token is settled: its run is still suspended, met.
      const lookedSecond = await b.call<number>('looks')
      const second = await b.call<string>('trigger', { task: 'paid.await', payload: { order: 'o-2' } })
      await armed(second, lookedSecond)
      c.call('send', { name: 'crash.paid', data: { order: 'o-2', crash: 'after-settle' }, eventId: 'evt-2' }).catch(() => {})
      await gone(c.pid)
      expect((await store.getRun(second))?.status).toBe('suspended')
      const again = await b.call<{ runs: { id: string }[]; resumed: string[] }>('send', {
        name: 'crash.paid',
        data: { order: 'o-2' },
        eventId: 'evt-2',
      })
      expect(again.resumed).toEqual([second])

      for (const id of [first, second]) {
        const run = await completed(id)
        expect(run.result).toMatchObject({ after: 'AFTER', paid: { event: { name: 'crash.paid' } } })
      }
      const receipts = [resent.runs[0].id, again.runs[0].id]
      for (const id of receipts) expect((await completed(id)).result).toBe('RECEIPT')
      // Each task started once per event, and each step body ran once, but
      // the receipt of evt-2: c started it before it died, and a step in
      // flight then may run again where the run is taken over (at least once).
      const runsOf = async (taskName: string) => (await store.listRuns({ taskName })).map((run) => run.id).sort()
      expect(await runsOf('paid.receipt')).toEqual([...receipts].sort())
      for (const id of [receipts[0], first, second]) expect(await effects({ run_id: id }), id).toHaveLength(1)
      const cutOff = (await effects({ run_id: receipts[1] })).map((row) => row.pid)
      expect(cutOff.length).toBeGreaterThanOrEqual(1)
      expect(new Set(cutOff).size, 'no process ran it twice').toBe(cutOff.length)
      await b.close()
    }, 60_000)

    it('300 runs on three processes all complete when one is killed mid-way, and no recorded step runs again', async () => {
      const servers = await Promise.all([startServer(), startServer(), startServer()])
      const count = 300
      const ids: string[] = []
      for (let i = 0; i < count; i++) ids.push(await servers[i % 3].call<string>('trigger', { task: 'chain' }))

      const victim = servers[0]
      // Killed once some runs are past their first sleep: by then the others
      // are sleeping or inside a step, on every process.
      await until(async () => (await effects({ step: 'b', pid: victim.pid })).length >= 10, 30_000)
      await victim.kill()
      const before = new Map((await store.listRuns({ taskName: 'chain' })).map((run) => [run.id, run]))
      // The kill did land mid-way: the dead process held runs that were not finished.
      const effectsBefore = new Set((await effects({ pid: victim.pid })).map((row) => row.run_id))
      expect([...effectsBefore].some((id) => before.get(id)?.status !== 'completed')).toBe(true)

      const done = await until(async () => {
        const runs = await store.listRuns({ taskName: 'chain', status: 'completed' })
        return runs.length === count && runs
      }, 60_000).catch(async (error) => {
        // Say which runs are stuck where, with their leases and timers.
        const stuck = await cluster.unfinished().catch((cause: Error) => `(they could not be listed: ${cause.message})`)
        throw new Error(`${error.message}\n${stuck}`)
      })
      for (const run of done) expect(run.result).toEqual({ steps: ['A', 'B', 'C'] })

      const ran = await effects()
      const byStep = new Map<string, { pid: number }[]>()
      for (const row of ran) {
        const key = `${row.run_id} ${row.step}`
        byStep.set(key, [...(byStep.get(key) ?? []), row])
      }
      for (const id of ids) {
        for (const step of ['a', 'b', 'c']) expect(byStep.get(`${id} ${step}`)?.length, `${id} ${step}`).toBeGreaterThanOrEqual(1)
        // A step recorded when the process died ran exactly once.
        for (const step of recorded(before.get(id)!)) expect(byStep.get(`${id} ${step}`), `${id} ${step}`).toHaveLength(1)
      }
      // Runs the killed process had started were taken over by the others:
      // every step still unrecorded when it died ran in a survivor.
      const survivors = new Set([servers[1].pid, servers[2].pid])
      const takenOver = ids.filter((id) => {
        const run = before.get(id)!
        return run.status !== 'completed' && recorded(run).length < 3 && ran.some((row) => row.run_id === id && row.pid === victim.pid)
      })
      expect(takenOver.length).toBeGreaterThan(0)
      for (const id of takenOver) {
        const left = ['a', 'b', 'c'].filter((step) => !recorded(before.get(id)!).includes(step))
        for (const step of left) {
          expect(
            ran.some((row) => row.run_id === id && row.step === step && survivors.has(row.pid)),
            `${id} ${step}`,
          ).toBe(true)
        }
      }
      // Only steps in flight at the kill ran twice, and each at most twice.
      for (const [key, rows] of byStep) expect(rows.length, key).toBeLessThanOrEqual(2)
      await Promise.all([servers[1].close(), servers[2].close()])
    }, 120_000)

    it('1,000 runs that each write a row in a transactional step with an async function, on processes killed (SIGKILL) at random points, leave exactly 1,000 rows and 1,000 completed runs', async () => {
      const servers = await Promise.all([startServer(), startServer(), startServer()])
      const count = 1000
      const trigger = (server: ChildServer) => server.call<string>('trigger', { task: 'ledger' })
      // Three quarters at once, on every server; the last quarter one at a
      // time on the first, which is never killed, while the others are.
      const ids = (await Promise.all(servers.map((server) => Promise.all(Array.from({ length: count / 4 }, () => trigger(server)))))).flat()
      const late = (async () => {
        for (let i = 0; i < count / 4; i++) ids.push(await trigger(servers[0]))
      })()
      const completed = async () => (await store.listRuns({ taskName: 'ledger', status: 'completed' })).length
      let landedMidway = 0
      for (let kill = 0; kill < 4; kill++) {
        // Spread over the work, however fast it goes: the kill comes once a
        // random share of it (in the kill's fifth) has completed.
        const share = (kill + Math.random()) / 5
        await until(async () => (await completed()) >= share * count, 60_000)
        const index = 1 + Math.floor(Math.random() * 2)
        if ((await completed()) < count) landedMidway++
        await servers[index].kill()
        servers[index] = await startServer()
      }
      expect(landedMidway).toBeGreaterThan(0)
      await late
      expect(new Set(ids).size).toBe(count)

      const done = await until(async () => {
        const runs = await store.listRuns({ taskName: 'ledger', status: 'completed' })
        return runs.length === count && runs
      }, 90_000).catch(async (error) => {
        const stuck = await cluster.unfinished().catch((cause: Error) => `(they could not be listed: ${cause.message})`)
        const failed = (await store.listRuns({ taskName: 'ledger', status: 'failed' })).map((run) => ({
          id: run.id,
          attempts: run.attempts,
          steps: run.steps,
        }))
        throw new Error(`${error.message}\n${stuck}\nfailed: ${JSON.stringify(failed)}`)
      })
      const rows = await servers[0].call<[string, number][]>('ledger')
      expect(rows).toHaveLength(count)
      const byRun = new Map(rows)
      expect(new Set(byRun.keys())).toEqual(new Set(ids))
      // Each run's recorded step and its row came from one commit: the same process.
      for (const run of done) expect(run.result, run.id).toEqual({ pid: byRun.get(run.id) })
      await Promise.all(servers.map((server) => server.close()))
    }, 150_000)

    it('a rolling deploy: runs of each version are resumed only by processes of their own; once the old processes stop, their runs move to the new version', async () => {
      const old = await Promise.all([startServer({ version: 'v1' }), startServer({ version: 'v1' })])
      const current = await Promise.all([startServer({ version: 'v2' }), startServer({ version: 'v2' })])
      const pids = (servers: ChildServer[]) => new Set(servers.map((server) => server.pid))
      const trigger = (server: ChildServer, sleep: number) => server.call<string>('trigger', { task: 'versioned', payload: { sleep } })
      // Side by side: each server triggers runs, which wake while every process looks for due work.
      const side = await Promise.all([...old, ...current].flatMap((server) => Array.from({ length: 6 }, () => trigger(server, 0.5))))
      // Runs of v1 that wake only after the old processes are gone.
      const stranded = await Promise.all(Array.from({ length: 6 }, (_, i) => trigger(old[i % 2], 4)))
      const completed = (ids: string[]) =>
        until(async () => {
          const runs = await Promise.all(ids.map((id) => store.getRun(id)))
          return runs.every((run) => run?.status === 'completed') && (runs as RunRecord[])
        }, 30_000)
      const sideRuns = await completed(side)
      const ran = await effects()
      for (const run of sideRuns) {
        const mine = run.version === 'v1' ? pids(old) : pids(current)
        const steps = ran.filter((row) => row.run_id === run.id)
        // A step in flight on a process that stalls past its lease may run again (at least once); never on another version.
        expect([...new Set(steps.map((row) => row.step))].sort(), run.id).toEqual([`after@${run.version}`, `before@${run.version}`])
        for (const row of steps) expect(mine.has(row.pid), `${run.id} ${row.step} ran on ${row.pid}`).toBe(true)
        expect(run.migrations).toBeUndefined()
      }
      expect(new Set(sideRuns.map((run) => run.version))).toEqual(new Set(['v1', 'v2']))

      // The old processes stop (as a deploy stops them); their sleeping runs move to v2 when they wake.
      await Promise.all(old.map((server) => server.close()))
      const moved = await completed(stranded)
      const after = await effects()
      for (const run of moved) {
        expect(run).toMatchObject({ version: 'v2', result: { version: 'v2' } })
        expect(run.migrations).toEqual([{ from: 'v1', to: 'v2', at: expect.any(String) }])
        const steps = after.filter((row) => row.run_id === run.id)
        expect([...new Set(steps.map((row) => row.step))].sort()).toEqual(['after@v2', 'before@v1'])
        expect(pids(current).has(steps.find((row) => row.step === 'after@v2')!.pid)).toBe(true)
      }
      await Promise.all(current.map((server) => server.close()))
    }, 90_000)

    it('a process that shuts down mid-attempt hands the attempt to another at once, not after its lease', async () => {
      // A lease and a poll far longer than the test: only the handover, and
      // the wake-up that comes with it, explain the takeover.
      const [first, second] = await Promise.all([
        startServer({ leaseMs: 600_000, pollMs: 600_000 }),
        startServer({ leaseMs: 600_000, pollMs: 600_000 }),
      ])
      const id = await first.call<string>('trigger', { task: 'slow', payload: { ms: 2000 } })
      await until(async () => (await effects({ run_id: id })).length > 0)
      await first.close()
      const run = await until(async () => {
        const latest = await store.getRun(id)
        return latest?.status === 'completed' && latest
      }, 10_000)
      expect(run.result).toEqual({ by: second.pid })
      // The first process's execution first.
      const pids = (await effects({ run_id: id })).map((row) => row.pid)
      pids.sort((x, y) => Number(y === first.pid) - Number(x === first.pid))
      expect(pids).toEqual([first.pid, second.pid])
      await second.close()
    })

    it('an attempt that outlasts leaseMs on a live process stays with it: the lease is renewed, never taken over', async () => {
      const [a, b] = await Promise.all([startServer(), startServer()])
      const id = await a.call<string>('trigger', { task: 'slow', payload: { ms: LEASE_MS * 3 } })
      const run = await until(async () => {
        const latest = await store.getRun(id)
        return latest?.status === 'completed' && latest
      }, 15_000)
      expect(run.result).toEqual({ by: a.pid })
      expect((await effects({ run_id: id })).map((row) => row.pid)).toEqual([a.pid])
      await Promise.all([a.close(), b.close()])
    })

    it('waitForRun on one process answers when the run finishes on another', async () => {
      const [a, b] = await Promise.all([startServer(), startServer()])
      const id = await a.call<string>('trigger', { task: 'approval' })
      await until(async () => (await store.getRun(id))?.status === 'suspended')
      const waited = a.call<string>('wait', { run: id })
      expect(await b.call('complete', { token: `${id}:approval`, payload: 'yes' })).toBe('completed')
      expect(await waited).toBe('completed')
      await Promise.all([a.close(), b.close()])
    })

    it("a server's GET /__tasks/events streams the changes of a run triggered and completed on another process", async () => {
      const [a, b] = await Promise.all([startServer(), startServer()])
      const events = await runEvents(a)
      const seen = (id: string) => events.changes.filter((change) => change.id === id).map((change) => change.status)
      // a listens for the others' changes from its stream's start, a moment after it opened: until a hears of one, b triggers probes.
      const probes: string[] = []
      await until(async () => {
        if (probes.some((probe) => seen(probe).length > 0)) return true
        probes.push(await b.call<string>('trigger', { task: 'once' }))
        await new Promise((resolve) => setTimeout(resolve, 100))
        return false
      }, 10_000)
      const id = await b.call<string>('trigger', { task: 'once' })
      await until(() => seen(id).includes('completed'), 10_000)
      expect(seen(id)).toEqual(['running', 'completed'])
      expect(events.changes.find((change) => change.id === id)).toEqual({ id, taskName: 'once', status: 'running' })
      expect((await store.getRun(id))?.result).toBe(b.pid)
      events.close()
      await Promise.all([a.close(), b.close()])
    })

    it('a token completed on any process resumes its run, and a parent resumes when its child finishes on another process', async () => {
      const [a, b, c] = await Promise.all([startServer(), startServer(), startServer()])
      const waiting = await a.call<string>('trigger', { task: 'approval' })
      await until(async () => (await store.getRun(waiting))?.status === 'suspended')
      expect(await b.call('complete', { token: `${waiting}:approval`, payload: 'from b' })).toBe('completed')
      // Completing it again on a third process finds it settled.
      expect(await c.call('complete', { token: `${waiting}:approval`, payload: 'from c' })).toBe('already_completed')
      const resumed = await until(async () => {
        const run = await store.getRun(waiting)
        return run?.status === 'completed' && run
      })
      // It continues on whichever live process takes it: usually b, which resumed it.
      const pids = [a.pid, b.pid, c.pid]
      expect(resumed.result).toEqual({ answer: { payload: 'from b' }, started: a.pid, finishedBy: expect.toBeOneOf(pids) })

      const parentId = await a.call<string>('trigger', { task: 'parent' })
      const child = await until(async () => {
        const [kid] = (await store.listRuns({ taskName: 'approval' })).filter((run) => run.parentRunId === parentId)
        return kid?.status === 'suspended' && kid
      })
      // The child finishes on c, after its token is completed there.
      expect(await c.call('complete', { token: `${child.id}:approval`, payload: 'child done' })).toBe('completed')
      const parent = await until(async () => {
        const run = await store.getRun(parentId)
        return run?.status === 'completed' && run
      })
      expect(parent.result).toEqual({
        child: { ok: true, result: { answer: { payload: 'child done' }, started: a.pid, finishedBy: expect.toBeOneOf(pids) } },
        started: a.pid,
        finishedBy: expect.toBeOneOf(pids),
      })
      await Promise.all([a.close(), b.close(), c.close()])
    })

    it('an idempotency key names one run, whichever processes trigger with it at once', async () => {
      const servers = await Promise.all([startServer(), startServer(), startServer()])
      for (let round = 0; round < 5; round++) {
        const idempotencyKey = `order-${round}`
        const ids = await Promise.all(servers.map((server) => server.call<string>('trigger', { task: 'once', opts: { idempotencyKey } })))
        expect(new Set(ids).size).toBe(1)
        const runs = (await store.listRuns({ taskName: 'once' })).filter((run) => run.idempotencyKey === idempotencyKey)
        expect(runs.map((run) => run.id)).toEqual([ids[0]])
      }
      await Promise.all(servers.map((server) => server.close()))
    })

    it('a tick fired by three processes at once starts one run', async () => {
      const servers = await Promise.all([startServer(), startServer(), startServer()])
      // Fired well inside one minute, so the three calls stand for one tick.
      await until(() => new Date().getSeconds() < 50, 15_000)
      const fired = await Promise.all(servers.map((server) => server.call<string[]>('fire')))
      expect(fired.flat()).toHaveLength(1)
      const runs = (await store.listRuns({ taskName: 'tick' })).filter((run) => run.trigger === 'cron')
      expect(runs.map((run) => run.id)).toEqual(fired.flat())
      // The same minute fired again, anywhere, starts nothing more.
      const again = await Promise.all(servers.map((server) => server.call<string[]>('fire')))
      expect(again.flat()).toEqual([])
      await Promise.all(servers.map((server) => server.close()))
    })

    it('three processes running the cron scheduler start one run per tick across a minute boundary', async () => {
      const servers = await Promise.all([startServer({ cron: true }), startServer({ cron: true }), startServer({ cron: true })])
      const cronRuns = async () => (await store.listRuns({ taskName: 'tick' })).filter((run) => run.trigger === 'cron')
      const before = new Set((await cronRuns()).map((run) => run.id))
      await until(async () => (await cronRuns()).some((run) => !before.has(run.id)), 65_000)
      // The other two processes fired the same tick within moments; give them time to have started a run.
      await new Promise((resolve) => setTimeout(resolve, 2000))
      const fresh = (await cronRuns()).filter((run) => !before.has(run.id))
      const minutes = fresh.map((run) => run.createdAt.slice(0, 16))
      expect(fresh).toHaveLength(new Set(minutes).size)
      await until(async () => (await Promise.all(fresh.map((run) => store.getRun(run.id)))).every((run) => run?.status === 'completed'))
      const finishers = (await Promise.all(fresh.map((run) => store.getRun(run.id)))).map((run) => run!.result)
      for (const pid of finishers) expect(servers.map((server) => server.pid)).toContain(pid)
      await Promise.all(servers.map((server) => server.close()))
    }, 90_000)
  })
}
