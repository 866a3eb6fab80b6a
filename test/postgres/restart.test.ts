// Runs outlive the process that started them: a server on a PostgresRunStore
// is killed (SIGKILL, no drain) with runs at every stage (sleeping, inside a
// step, finished), and a second server on the same database finishes every
// one of them without running a recorded step again.
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { PostgresRunStore } from '../../src/postgres.ts'
import type { RunRecord } from '../../src/types.ts'
import { until } from '../tasks/_helpers.ts'
import { createDatabase } from './_pg.ts'

const SCRIPT = fileURLToPath(new URL('../fixtures/postgres-restart/server.ts', import.meta.url))
const SECRET = 'restart-test-secret-0123456789abcdef'
const AUTH = { authorization: `Bearer ${SECRET}` }

const dir = mkdtempSync(join(tmpdir(), 'svc-pg-restart-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

let url: string
let store: PostgresRunStore
beforeAll(async () => {
  url = await createDatabase('restart')
  store = new PostgresRunStore({ url })
})
afterAll(() => store.close())

const started: ChildProcess[] = []
afterEach(() => {
  for (const child of started.splice(0)) child.kill('SIGKILL')
})

interface Server {
  port: number
  pid: number
  kill(): Promise<void>
}

async function startServer(effects: string): Promise<Server> {
  const child = spawn(process.execPath, [SCRIPT, url, effects, '1000'], {
    env: { ...process.env, SVC_TASK_SECRET: SECRET },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  started.push(child)
  let out = ''
  child.stdout!.on('data', (chunk) => (out += chunk))
  child.stderr!.on('data', (chunk) => (out += chunk))
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  const port = Number(await until(() => /port (\d+)/.exec(out)?.[1] ?? (child.exitCode !== null && fail(out)), 15_000))
  return {
    port,
    pid: child.pid!,
    async kill() {
      child.kill('SIGKILL')
      await exited
    },
  }
}

function fail(out: string): never {
  throw new Error(`the server exited before listening:\n${out}`)
}

async function trigger(server: Server): Promise<string> {
  const response = await fetch(`http://127.0.0.1:${server.port}/__tasks/chain`, {
    method: 'POST',
    headers: { ...AUTH, 'content-type': 'application/json' },
    body: '{}',
  })
  expect(response.status).toBe(202)
  return ((await response.json()) as { id: string }).id
}

/** Every execution of a step body, as [run id, step, pid]. */
function executions(effects: string): [string, string, number][] {
  return readFileSync(effects, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      const [runId, step, pid] = line.split(' ')
      return [runId, step, Number(pid)]
    })
}

describe('PostgresRunStore across a restart', () => {
  it('runs killed at every stage all complete on the next process, and no recorded step runs again', async () => {
    const effects = join(dir, 'chain.log')
    writeFileSync(effects, '')
    const count = 40

    const first = await startServer(effects)
    const ids: string[] = []
    for (let i = 0; i < count; i++) ids.push(await trigger(first))
    // Killed once some runs are past their sleep: by then the others are
    // sleeping or inside a step.
    await until(() => executions(effects).filter(([, step]) => step === 'b').length >= count / 4, 15_000)
    await first.kill()

    // What the database held when the process died.
    const before = new Map((await store.listRuns({ taskName: 'chain' })).map((run) => [run.id, run]))
    expect([...before.keys()].sort()).toEqual([...ids].sort())
    const recorded = (run: RunRecord) => Object.keys(run.steps).filter((key) => key !== 'nap' && run.steps[key].status === 'completed')
    const stages = new Set([...before.values()].map((run) => `${run.status}:${recorded(run).join('')}`))
    // The kill did land mid-way: not every run was at the same point.
    expect(stages.size).toBeGreaterThan(1)

    const second = await startServer(effects)
    const done = await until(async () => {
      const runs = await store.listRuns({ taskName: 'chain', status: 'completed' })
      return runs.length === count && runs
    }, 30_000)
    for (const run of done) {
      expect(run.ok).toBe(true)
      expect((run.result as { steps: string[] }).steps).toEqual(['A', 'B', 'C'])
      expect(run.steps).toMatchObject({
        a: { status: 'completed' },
        nap: { status: 'completed' },
        b: { status: 'completed' },
        c: { status: 'completed' },
      })
    }

    const ran = executions(effects)
    for (const id of ids) {
      const mine = ran.filter(([runId]) => runId === id)
      for (const step of ['a', 'b', 'c'])
        expect(
          mine.some(([, s]) => s === step),
          `${id} ${step}`,
        ).toBe(true)
      // A step recorded before the kill ran once, in the first process.
      for (const step of recorded(before.get(id)!)) {
        expect(
          mine.filter(([, s]) => s === step),
          `${id} ${step}`,
        ).toEqual([[id, step, first.pid]])
      }
    }
    // Only the steps in flight at the kill ran twice, at most once more each.
    const twice = ran.length - count * 3
    expect(twice).toBeGreaterThanOrEqual(0)
    expect(twice).toBeLessThanOrEqual(count)
    await second.kill()
  })
})
