import { describe, expect, it } from 'vitest'
import type { RunRecord } from '../../src/types.ts'
import { until } from '../_helpers.ts'
import { fixtureServerPerTest } from './_svc.ts'

const SECRET = 'wake-fire-cli-secret-0123456789abcdef'
const fixture = fixtureServerPerTest('wake-fire-cli', SECRET)
const cli = fixture.cli

/** Starts a run of `task` over HTTP, with extra request headers, and resolves with its id. */
async function trigger(task: string, headers: Record<string, string> = {}): Promise<string> {
  const response = await fetch(`${fixture.server.url}/__tasks/${task}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${SECRET}`, ...headers },
  })
  expect(response.status).toBe(202)
  return ((await response.json()) as { id: string }).id
}

function finished(id: string): Promise<RunRecord> {
  return fixture.server.runtime.waitForRun(id)
}

async function inStatus(id: string, status: string): Promise<void> {
  await until(async () => (await fixture.server.runtime.getRun(id))?.status === status)
}

describe('svc runs wake', () => {
  it('resumes a run sleeping on ctx.step.sleep now, which then finishes', async () => {
    const id = await trigger('sleeper')
    await inStatus(id, 'suspended')
    const { code, stdout, stderr } = await cli(['runs', 'wake', id])
    expect(stderr).toBe('')
    expect(code).toBe(0)
    expect(stdout).toMatch(new RegExp(`^Woke run ${id} \\([a-z]+\\)\\.\\n$`))
    expect(await finished(id)).toMatchObject({ status: 'completed', result: { before: 'awake', after: 'rested' } })
  })

  it('starts a delayed run now', async () => {
    const id = await trigger('quick', { 'svc-delay-seconds': '3600' })
    await inStatus(id, 'scheduled')
    const { code, stdout } = await cli(['runs', 'wake', id])
    expect(code).toBe(0)
    expect(stdout).toMatch(new RegExp(`^Woke run ${id} \\([a-z]+\\)\\.\\n$`))
    expect(await finished(id)).toMatchObject({ status: 'completed', result: { done: true } })
  })

  it('--json prints the answer, { id, status }', async () => {
    const id = await trigger('sleeper')
    await inStatus(id, 'suspended')
    const { code, stdout } = await cli(['runs', 'wake', id, '--json'])
    expect(code).toBe(0)
    expect(JSON.parse(stdout)).toEqual({ id, status: expect.any(String) })
    await finished(id)
  })

  it("a run that waits on a token is not woken: exit 1 with the server's 409 RUN_NOT_SLEEPING", async () => {
    const id = await trigger('approval')
    await inStatus(id, 'suspended')
    const { code, stdout, stderr } = await cli(['runs', 'wake', id])
    expect(code).toBe(1)
    expect(stdout).toBe('')
    expect(stderr).toContain(`svc runs wake: ${fixture.server.url}/__tasks/runs/${id}/wake answered 409 RUN_NOT_SLEEPING: `)
    expect((await fixture.server.runtime.getRun(id))?.status).toBe('suspended')
  })

  it('a finished run exits 1 naming 409 RUN_FINISHED, and an unknown one 404 RUN_NOT_FOUND', async () => {
    const id = await trigger('quick')
    await finished(id)
    const done = await cli(['runs', 'wake', id])
    expect(done.code).toBe(1)
    expect(done.stderr).toContain(`svc runs wake: ${fixture.server.url}/__tasks/runs/${id}/wake answered 409 RUN_FINISHED: `)
    const unknown = await cli(['runs', 'wake', 'no-such-run'])
    expect(unknown.code).toBe(1)
    expect(unknown.stderr).toContain(`${fixture.server.url}/__tasks/runs/no-such-run/wake answered 404 RUN_NOT_FOUND: `)
  })

  it('a wrong secret is a 401 that says to set SVC_TASK_SECRET', async () => {
    const id = await trigger('sleeper')
    await inStatus(id, 'suspended')
    const { code, stderr } = await cli(['runs', 'wake', id], { SVC_TASK_SECRET: 'wrong' })
    expect(code).toBe(1)
    expect(stderr).toContain('answered 401 UNAUTHORIZED: ')
    expect(stderr).toContain('The task secret is wrong: set SVC_TASK_SECRET')
    expect((await fixture.server.runtime.getRun(id))?.status).toBe('suspended')
  })
})

describe('svc tasks fire', () => {
  it('starts a run of a scheduled task now, as a tick of its schedule, and prints its id', async () => {
    const { code, stdout, stderr } = await cli(['tasks', 'fire', 'nightly'])
    expect(stderr).toBe('')
    expect(code).toBe(0)
    const [, id] = stdout.match(/^Fired nightly as run (\S+) \([a-z]+\)\.\n$/) ?? []
    expect(id).toBeDefined()
    expect(await finished(id)).toMatchObject({ taskName: 'nightly', trigger: 'cron', status: 'completed', result: { swept: true } })
  })

  it('--json prints the answer, { id, status }', async () => {
    const { code, stdout } = await cli(['tasks', 'fire', 'nightly', '--json'])
    expect(code).toBe(0)
    const answer = JSON.parse(stdout)
    expect(answer).toEqual({ id: expect.any(String), status: expect.any(String) })
    expect(await finished(answer.id)).toMatchObject({ trigger: 'cron' })
  })

  it("a task without a schedule exits 1 with the server's 400; an unknown task with 404 TASK_NOT_FOUND", async () => {
    const unscheduled = await cli(['tasks', 'fire', 'quick'])
    expect(unscheduled.code).toBe(1)
    expect(unscheduled.stdout).toBe('')
    expect(unscheduled.stderr).toContain(`svc tasks fire: ${fixture.server.url}/__tasks/quick/fire answered 400 `)
    const unknown = await cli(['tasks', 'fire', 'jobs.nope'])
    expect(unknown.code).toBe(1)
    expect(unknown.stderr).toContain(`svc tasks fire: ${fixture.server.url}/__tasks/jobs.nope/fire answered 404 TASK_NOT_FOUND: `)
  })
})
