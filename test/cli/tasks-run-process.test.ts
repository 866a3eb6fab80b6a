import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { svc } from './_svc.ts'

const root = fileURLToPath(new URL('../fixtures/lingering-app', import.meta.url))

// `svc tasks run` imports every route of the app, so any module-scope timer
// (a hot route's setInterval) or a handler that ignored its abort signal
// would keep the process up after the run has ended and been printed.
describe('svc tasks run ends when the run ends', () => {
  it('exits 0 after printing even though a module the task imports keeps a timer', async () => {
    const result = await svc(['tasks', 'run', 'jobs.quick', '--input', '{"n":1}', '--json', '--root', root])
    expect(result.killed).toBe(false)
    expect(result.code).toBe(0)
    expect(JSON.parse(result.stdout)).toMatchObject({ ok: true, result: { input: { n: 1 } } })
  })

  it('exits 1 after a timed-out attempt whose handler never returns', async () => {
    const result = await svc(['tasks', 'run', 'jobs.stuck', '--json', '--root', root])
    expect(result.killed).toBe(false)
    expect(result.code).toBe(1)
    const envelope = JSON.parse(result.stdout)
    expect(envelope.ok).toBe(false)
    expect(envelope.attempts[0].error).toBe('Attempt 1 timed out after 300 ms')
  })
})

describe('svc tasks run --json keeps stdout to the envelope', () => {
  it("the app's console output goes to stderr", async () => {
    const result = await svc(['tasks', 'run', 'jobs.noisy', '--json', '--root', root])
    expect(result.code).toBe(0)
    expect(JSON.parse(result.stdout)).toMatchObject({ ok: true, result: 'done' })
    expect(result.stderr).toContain('noisy: module loaded')
    expect(result.stderr).toContain('noisy: running')
  })

  it('without --json the console output stays on stdout with the readable envelope', async () => {
    const result = await svc(['tasks', 'run', 'jobs.noisy', '--root', root])
    expect(result.code).toBe(0)
    expect(result.stdout).toContain('noisy: running')
    expect(result.stdout).toContain('jobs.noisy: completed after 1 attempt(s)')
  })
})

// createTaskRuntime registers task routes only; importing the app's HTTP and
// hot routes as well runs their module code (timers, sockets, connections)
// for nothing, and one that fails to load would stop every task from running.
describe('svc tasks run loads the task routes only', () => {
  it('a serverless route that throws at load does not stop a task', async () => {
    const result = await svc(['tasks', 'run', 'jobs.quick', '--json', '--root', root])
    expect(result.stderr).not.toContain('orders database is unreachable')
    expect(result.code).toBe(0)
  })

  it('tasks can still enqueue and wait for each other', async () => {
    const result = await svc(['tasks', 'run', 'jobs.parent', '--json', '--root', root])
    expect(result.code).toBe(0)
    expect(JSON.parse(result.stdout).result).toEqual({ ok: true, result: { input: { from: 'parent' } } })
  })
})

describe('svc tasks run --input', () => {
  it('takes a negative number as the JSON payload', async () => {
    const result = await svc(['tasks', 'run', 'jobs.quick', '--input', '-1', '--json', '--root', root])
    expect(result.stderr).not.toContain('needs a value')
    expect(result.code).toBe(0)
    expect(JSON.parse(result.stdout).result).toEqual({ input: -1 })
  })
})
