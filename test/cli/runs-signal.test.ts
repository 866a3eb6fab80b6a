import { describe, expect, it } from 'vitest'
import { until } from '../_helpers.ts'
import { fixtureServerPerTest } from './_svc.ts'

const SECRET = 'signals-cli-secret-0123456789abcdef'
const fixture = fixtureServerPerTest('signals-cli', SECRET)
const cli = fixture.cli

async function waitingRun(): Promise<string> {
  const response = await fetch(`${fixture.server.url}/__tasks/chat`, { method: 'POST', headers: { authorization: `Bearer ${SECRET}` } })
  const { id } = (await response.json()) as { id: string }
  await until(async () => (await fixture.server.runtime.getRun(id))?.status === 'suspended')
  return id
}

describe('svc runs signal and svc runs signals', () => {
  it('sends signals with JSON data, once per --signal-id, which the run reads in order; signals lists them', async () => {
    const id = await waitingRun()
    const first = await cli(['runs', 'signal', id, 'message', '{"text":"hi"}', '--signal-id', 'm-1'])
    expect(first).toMatchObject({ code: 0, stderr: '' })
    expect(first.stdout).toBe(`Signal "message" sent to run ${id} as m-1.\n`)
    const again = await cli(['runs', 'signal', id, 'message', '{"text":"hi"}', '--signal-id', 'm-1'])
    expect(again.stdout).toBe('Signal "message" was sent before as m-1; the run keeps it once.\n')
    expect((await cli(['runs', 'signal', id, 'message'])).code).toBe(0)
    const listed = await cli(['runs', 'signals', id])
    expect(listed.code).toBe(0)
    expect(listed.stdout).toMatch(/^ID\s+NAME\s+SENT\s+TAKEN BY STEP\s+DATA\n/)
    expect(listed.stdout).toMatch(/m-1\s+message\s+.+\s+signals:message:1\s+\{"text":"hi"\}/)
    const json = await cli(['runs', 'signal', id, 'message', '"bye"', '--json'])
    expect(JSON.parse(json.stdout)).toEqual({ id: expect.any(String), runId: id, name: 'message', duplicate: false })
    expect(await fixture.server.runtime.waitForRun(id)).toMatchObject({ status: 'completed', result: [{ text: 'hi' }, null, 'bye'] })
    const late = await cli(['runs', 'signal', id, 'message', '"late"'])
    expect(late.code).toBe(1)
    expect(late.stderr).toContain(`svc runs signal: ${fixture.server.url}/__tasks/runs/${id}/signals/message answered 409 RUN_FINISHED: `)
  })

  it('refuses data that is not JSON before sending, and a bad name with the server’s 400', async () => {
    const id = await waitingRun()
    const bad = await cli(['runs', 'signal', id, 'message', '{oops'])
    expect(bad.code).toBe(1)
    expect(bad.stderr).toContain('The signal data is not valid JSON')
    expect(bad.stderr).toContain(`'{"ok":true}'`)
    const name = await cli(['runs', 'signal', id, 'no!'])
    expect(name.code).toBe(1)
    expect(name.stderr).toContain('answered 400 INVALID_SIGNAL: a signal name is 1 to 128 letters')
    expect(await fixture.server.runtime.listSignals(id)).toEqual([])
  })
})
