// A run outlives the process that started it: a server on a SqliteRunStore
// is killed (SIGKILL, no drain) while a run waits, and a second server on
// the same file finishes it without running its completed steps again.
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import type { RunRecord } from '../../src/types.ts'
import { until, untimedSteps } from '../tasks/_helpers.ts'

const SCRIPT = fileURLToPath(new URL('../fixtures/sqlite-restart/server.ts', import.meta.url))
const SECRET = 'restart-test-secret-0123456789abcdef'
const AUTH = { authorization: `Bearer ${SECRET}` }

const dir = mkdtempSync(join(tmpdir(), 'svc-sqlite-restart-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

interface Server {
  child: ChildProcess
  port: number
  pid: number
  log(): string
  kill(): Promise<void>
}

const started: ChildProcess[] = []
afterEach(() => {
  for (const child of started.splice(0)) child.kill('SIGKILL')
})

async function startServer(db: string, effects: string, env: Record<string, string> = {}): Promise<Server> {
  const child = spawn(process.execPath, [SCRIPT, db, effects], {
    env: { ...process.env, SVC_TASK_SECRET: SECRET, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  started.push(child)
  let out = ''
  child.stdout!.on('data', (chunk) => (out += chunk))
  child.stderr!.on('data', (chunk) => (out += chunk))
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  const port = Number(await until(() => /port (\d+)/.exec(out)?.[1] ?? (child.exitCode !== null && fail(out)), 15_000))
  return {
    child,
    port,
    pid: child.pid!,
    log: () => out,
    async kill() {
      child.kill('SIGKILL')
      await exited
    },
  }
}

function fail(out: string): never {
  throw new Error(`the server exited before listening:\n${out}`)
}

async function trigger(server: Server, task: string, headers: Record<string, string> = {}): Promise<string> {
  const response = await fetch(`http://127.0.0.1:${server.port}/__tasks/${task}`, {
    method: 'POST',
    headers: { ...AUTH, 'content-type': 'application/json', ...headers },
    body: '{}',
  })
  expect(response.status).toBe(202)
  return ((await response.json()) as { id: string }).id
}

async function getRun(server: Server, id: string): Promise<RunRecord> {
  const response = await fetch(`http://127.0.0.1:${server.port}/__tasks/${id}`, { headers: AUTH })
  expect(response.status).toBe(200)
  return (await response.json()) as RunRecord
}

/** Polls the run over HTTP until it reaches `status`. */
function runIn(server: Server, id: string, status: RunRecord['status']): Promise<RunRecord> {
  return until(async () => {
    const run = await getRun(server, id)
    return run.status === status ? run : undefined
  }, 15_000)
}

function executions(effects: string): string[] {
  return readFileSync(effects, 'utf8').split('\n').filter(Boolean)
}

describe('SqliteRunStore across a restart', () => {
  it('a run killed while sleeping completes on the next process without re-running step a', async () => {
    const db = join(dir, 'nap.db')
    const effects = join(dir, 'nap.log')
    writeFileSync(effects, '')

    const first = await startServer(db, effects)
    const id = await trigger(first, 'nap')
    const suspended = await runIn(first, id, 'suspended')
    expect(suspended.suspended).toMatchObject({ stepKey: 'nap', waitpoint: { type: 'sleep' } })
    await first.kill()

    const second = await startServer(db, effects)
    const done = await runIn(second, id, 'completed')
    expect(done.ok).toBe(true)
    // The process that finished the run is the second one.
    expect(done.result).toEqual({ a: 'A', finishedBy: second.pid })
    expect(untimedSteps(done.steps)).toEqual({
      a: { status: 'completed', output: 'A', kind: 'run' },
      nap: { status: 'completed', kind: 'sleep' },
    })
    expect(done.suspended).toBeUndefined()
    // Step a ran once, in the first process.
    expect(executions(effects)).toEqual([`a ${first.pid}`])
    await second.kill()
  })

  it('a token wait survives a restart and is completed over HTTP on the new process', async () => {
    const db = join(dir, 'token.db')
    const effects = join(dir, 'token.log')
    writeFileSync(effects, '')

    const first = await startServer(db, effects)
    const id = await trigger(first, 'approval')
    const suspended = await runIn(first, id, 'suspended')
    expect(suspended.suspended?.waitpoint.type).toBe('token')
    const tokenId = (suspended.suspended!.waitpoint as { tokenId: string }).tokenId
    await first.kill()

    const second = await startServer(db, effects)
    // Still waiting after recovery: nothing but the token resumes it.
    expect((await getRun(second, id)).status).toBe('suspended')
    const completed = await fetch(`http://127.0.0.1:${second.port}/__tasks/tokens/${encodeURIComponent(tokenId)}`, {
      method: 'POST',
      headers: { ...AUTH, 'content-type': 'application/json' },
      body: JSON.stringify({ approved: true }),
    })
    expect(completed.status).toBe(200)
    expect(await completed.json()).toEqual({ ok: true, status: 'completed' })

    const done = await runIn(second, id, 'completed')
    expect(done.result).toEqual({ a: 'APPROVAL-A', answer: { payload: { approved: true } }, finishedBy: second.pid })
    expect(untimedSteps(done.steps)).toEqual({
      a: { status: 'completed', output: 'APPROVAL-A', kind: 'run' },
      approve: { status: 'completed', output: { approved: true }, kind: 'waitForToken' },
    })
    expect(executions(effects)).toEqual([`approval-a ${first.pid}`])
    await second.kill()
  })

  it('an attempt cut off by the kill runs again on the next process, from the first unrecorded step', async () => {
    const db = join(dir, 'work.db')
    const effects = join(dir, 'work.log')
    writeFileSync(effects, '')

    const first = await startServer(db, effects, { HOLD_STEP_B: '1' })
    const id = await trigger(first, 'work')
    await until(() => executions(effects).length === 2, 15_000)
    expect((await getRun(first, id)).status).toBe('running')
    await first.kill()

    const second = await startServer(db, effects)
    const done = await runIn(second, id, 'completed')
    expect(done.result).toEqual({ a: 'WORK-A', b: 'WORK-B', finishedBy: second.pid })
    // Steps run at least once: step b had not been recorded, so it runs again
    // (at least once); step a had been, so it does not.
    // It is given the same idempotency key on both processes.
    const key = `svc:${id}:b`
    expect(executions(effects)).toEqual([`work-a ${first.pid}`, `work-b ${first.pid} ${key}`, `work-b ${second.pid} ${key}`])
    // The attempt the kill cut off left no record; the one that finished did.
    expect(done.attempts.map((a) => [a.index, a.error])).toEqual([[1, undefined]])
    // What it logged before the kill was kept, and the run on the next process did not log it again.
    expect(done.logs?.kept.map((entry) => [entry.seq, entry.message])).toEqual([[1, 'work begins']])
    await second.kill()
  })

  it('a delayed run scheduled before the kill starts on the next process', async () => {
    const db = join(dir, 'delay.db')
    const effects = join(dir, 'delay.log')
    writeFileSync(effects, '')

    const first = await startServer(db, effects)
    const id = await trigger(first, 'work', { 'svc-delay-seconds': '2' })
    expect((await getRun(first, id)).status).toBe('scheduled')
    await first.kill()

    const second = await startServer(db, effects)
    const done = await runIn(second, id, 'completed')
    expect(done.result).toEqual({ a: 'WORK-A', b: 'WORK-B', finishedBy: second.pid })
    expect(executions(effects)).toEqual([`work-a ${second.pid}`, `work-b ${second.pid} svc:${id}:b`])
    await second.kill()
  })
})
