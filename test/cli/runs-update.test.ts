import { describe, expect, it } from 'vitest'
import { until } from '../_helpers.ts'
import { fixtureServerPerTest } from './_svc.ts'

const SECRET = 'updates-cli-secret-0123456789abcdef'
const fixture = fixtureServerPerTest('updates-cli', SECRET)
const cli = fixture.cli

/** A cart run waiting for its checkout, or, with `delaySeconds`, not started yet. */
async function cart(delaySeconds?: number): Promise<string> {
  const headers: Record<string, string> = { authorization: `Bearer ${SECRET}` }
  if (delaySeconds !== undefined) headers['svc-delay-seconds'] = String(delaySeconds)
  const response = await fetch(`${fixture.server.url}/__tasks/cart`, { method: 'POST', headers })
  const { id } = (await response.json()) as { id: string }
  const status = delaySeconds === undefined ? 'suspended' : 'scheduled'
  await until(async () => (await fixture.server.runtime.getRun(id))?.status === status)
  return id
}

describe('svc runs update and svc runs updates', () => {
  it("prints the run's answer as JSON, the same one for an --update-id sent again; updates lists them", async () => {
    const id = await cart()
    const first = await cli(['runs', 'update', id, 'add', '{"item":"apple"}', '--update-id', 'u-1'])
    expect(first).toMatchObject({ code: 0, stderr: '' })
    expect(JSON.parse(first.stdout)).toEqual({ count: 1 })
    const again = await cli(['runs', 'update', id, 'add', '{"item":"pear"}', '--update-id', 'u-1'])
    expect(again).toMatchObject({ code: 0, stdout: first.stdout })
    const none = await cli(['runs', 'update', id, 'clear', '--update-id', 'c-1', '--timeout', '5'])
    expect(none).toMatchObject({ code: 0, stdout: `Run ${id} answered update "clear" (c-1) with no result.\n` })
    const json = await cli(['runs', 'update', id, 'add', '{"item":"pear"}', '--json'])
    expect(JSON.parse(json.stdout)).toEqual({ id: expect.any(String), runId: id, name: 'add', status: 'completed', result: { count: 2 } })
    const failed = await cli(['runs', 'update', id, 'add', '{"item":"bomb"}', '--update-id', 'boom'])
    expect(failed.code).toBe(1)
    const listed = await cli(['runs', 'updates', id])
    expect(listed.code).toBe(0)
    expect(listed.stdout).toMatch(/^ID\s+NAME\s+STATUS\s+SENT\s+ANSWERED\s+RESULT \/ ERROR\n/)
    expect(listed.stdout).toMatch(/u-1\s+add\s+completed\s+.+\s+\{"count":1\}\n/)
    expect(listed.stdout).toMatch(/c-1\s+clear\s+completed\s+.+\s+-\n/)
    expect(listed.stdout).toMatch(/boom\s+add\s+failed\s+.+\s+UPDATE_FAILED: no bombs in carts\n/)
    const listedJson = JSON.parse((await cli(['runs', 'updates', id, '--json'])).stdout) as { updates: unknown[] }
    expect(listedJson.updates).toHaveLength(4)
  })

  it("exits 1 with the server's code and message when it refuses, and refuses bad data or --timeout before sending", async () => {
    const id = await cart()
    const url = `${fixture.server.url}/__tasks/runs/${id}/updates`
    const failed = await cli(['runs', 'update', id, 'add', '{"item":"bomb"}'])
    expect(failed).toMatchObject({ code: 1, stdout: '' })
    expect(failed.stderr).toContain(`svc runs update: ${url}/add answered 422 UPDATE_FAILED: Update "add" (`)
    expect(failed.stderr).toContain('no bombs in carts')
    const invalid = await cli(['runs', 'update', id, 'add', '{"item":""}'])
    expect(invalid.code).toBe(1)
    expect(invalid.stderr).toContain(`${url}/add answered 400 VALIDATION_FAILED: `)
    const unhandled = await cli(['runs', 'update', id, 'remove'])
    expect(unhandled.code).toBe(1)
    expect(unhandled.stderr).toContain(`${url}/remove answered 404 UPDATE_NOT_HANDLED: `)
    const name = await cli(['runs', 'update', id, 'no!'])
    expect(name.code).toBe(1)
    expect(name.stderr).toContain('answered 400 INVALID_UPDATE: an update name is 1 to 128')
    const bad = await cli(['runs', 'update', id, 'add', '{oops'])
    expect(bad.code).toBe(1)
    expect(bad.stderr).toContain('The update data is not valid JSON')
    for (const timeout of ['0', 'abc', '301']) {
      const usage = await cli(['runs', 'update', id, 'add', '{"item":"x"}', '--timeout', timeout])
      expect(usage.code, timeout).toBe(1)
      expect(usage.stderr).toContain(`--timeout must be a number of seconds above 0 and at most 300 (got "${timeout}")`)
    }
    expect((await fixture.server.runtime.listUpdates(id)).map((u) => u.error?.code)).toEqual([
      'UPDATE_FAILED',
      'VALIDATION_FAILED',
      'UPDATE_NOT_HANDLED',
    ])
    await fixture.server.runtime.sendSignal(id, 'checkout')
    expect(await fixture.server.runtime.waitForRun(id)).toMatchObject({ status: 'completed' })
    const late = await cli(['runs', 'update', id, 'add', '{"item":"late"}'])
    expect(late.code).toBe(1)
    expect(late.stderr).toContain(`${url}/add answered 409 RUN_FINISHED: `)
    expect((await cli(['runs', 'updates', 'no-such-run'])).stderr).toContain('answered 404 RUN_NOT_FOUND')
  })

  it('exits 2 saying how to ask again while the run cannot answer; asked again with --update-id once it has, prints the answer', async () => {
    const id = await cart(3600)
    const pending = await cli(['runs', 'update', id, 'add', '{"item":"early"}', '--update-id', 'e 1', '--timeout', '0.2'])
    expect(pending).toMatchObject({ code: 2, stdout: '' })
    expect(pending.stderr).toContain(`Update "add" (e 1) is pending: run ${id} has not answered it yet.`)
    expect(pending.stderr).toContain(`Ask for its answer again with: svc runs update ${id} add --update-id 'e 1'`)
    const listed = await cli(['runs', 'updates', id])
    expect(listed.stdout).toMatch(/e 1\s+add\s+pending\s+.+\s+-\s+-\n/)
    const json = await cli(['runs', 'update', id, 'add', '--json', '--timeout', '0.2'])
    expect(json.code).toBe(2)
    expect(JSON.parse(json.stdout)).toMatchObject({ id: expect.any(String), runId: id, name: 'add', status: 'pending' })
    await fixture.server.runtime.wake(id)
    await until(async () => (await fixture.server.runtime.listUpdates(id))[0]?.status === 'completed')
    const answered = await cli(['runs', 'update', id, 'add', '--update-id', 'e 1'])
    expect(answered).toMatchObject({ code: 0, stderr: '' })
    expect(JSON.parse(answered.stdout)).toEqual({ count: 1 })
  })
})
