/**
 * `sendRunSignal` from `svcjs/client`, in Node against a real server on
 * port 0: it sends a signal with a run token that allows it, as JSON, with
 * its id, to the run the page names; a refusal rejects with the server's
 * status and code, a lost connection with `NETWORK_ERROR`, and a bad
 * argument throws a `TypeError` before any request.
 */
import { describe, expect, it } from 'vitest'
import { RunSignalError, sendRunSignal } from '../../src/client.ts'
import { createRunToken } from '../../src/index.ts'
import { serve, until } from '../http/_helpers.ts'
import { reportApp, SECRET } from './_runs.ts'

const ADMIN = { authorization: `Bearer ${SECRET}` }

async function start() {
  const server = await serve({ apiRoutes: reportApp().routes, env: { NODE_ENV: 'production', SVC_TASK_SECRET: SECRET } })
  const record = async (id: string) =>
    (await (await fetch(`${server.url}/__tasks/runs/${id}`, { headers: ADMIN })).json()) as Record<string, any>
  const signals = async (id: string) =>
    ((await (await fetch(`${server.url}/__tasks/runs/${id}/signals`, { headers: ADMIN })).json()) as { signals: Record<string, any>[] })
      .signals
  const chat = async () => {
    const res = await fetch(`${server.url}/__tasks/jobs.chat`, { method: 'POST', headers: ADMIN })
    const { id } = (await res.json()) as { id: string }
    await until(async () => (await record(id)).status === 'suspended')
    return id
  }
  return { server, record, signals, chat }
}

/** What `promise` rejected with. */
const rejection = (promise: Promise<unknown>) =>
  promise.then(
    () => undefined,
    (error: unknown) => error,
  )

describe('sendRunSignal()', () => {
  it('sends a signal the token allows, with its data as JSON, and the run takes it', async () => {
    const { server, record, chat } = await start()
    const id = await chat()
    const token = await createRunToken(id, { secret: SECRET, signals: ['message'] })
    const sent = await sendRunSignal(server.url, id, 'message', { text: 'hello' }, { token, id: 'm-1' })
    expect(sent).toEqual({ id: 'm-1', runId: id, name: 'message', duplicate: false })
    const done = await until(async () => {
      const run = await record(id)
      return run.status === 'completed' && run
    })
    expect(done.result).toEqual({ text: 'hello' })
  })

  it('sends no body for undefined data, a name with a slash as one segment, and an id again as the same signal', async () => {
    const { server, signals, chat } = await start()
    const id = await chat()
    const token = await createRunToken(id, { secret: SECRET, signals: ['chat/typing'] })
    const sent = await sendRunSignal(new URL(server.url), id, 'chat/typing', undefined, { token })
    expect(sent).toMatchObject({ runId: id, name: 'chat/typing', duplicate: false, id: expect.any(String) })
    expect(await signals(id)).toEqual([{ id: sent.id, runId: id, name: 'chat/typing', sentAt: expect.any(String) }])
    const again = await sendRunSignal(`${server.url}/`, id, 'chat/typing', 'ignored', { token: async () => token, id: sent.id })
    expect(again).toEqual({ ...sent, duplicate: true })
    expect(await signals(id)).toHaveLength(1)
  })

  it("rejects with the server's status and code when it refuses, keeping nothing", async () => {
    const { server, signals, chat } = await start()
    const id = await chat()
    const readOnly = await createRunToken(id, { secret: SECRET })
    const refused = await rejection(sendRunSignal(server.url, id, 'message', 'hi', { token: readOnly }))
    expect(refused).toBeInstanceOf(RunSignalError)
    expect(refused).toMatchObject({
      name: 'RunSignalError',
      status: 403,
      code: 'RUN_TOKEN_NOT_ALLOWED',
      message: expect.stringMatching(/createRunToken\(runId, \{ signals: \['message'\] \}\)/),
    })
    const other = await createRunToken('another-run', { secret: SECRET, signals: true })
    expect(await rejection(sendRunSignal(server.url, id, 'message', 'hi', { token: other }))).toMatchObject({
      status: 401,
      code: 'RUN_TOKEN_WRONG_RUN',
    })
    expect(await signals(id)).toEqual([])
  })

  it('rejects with NETWORK_ERROR when no answer comes, and TOKEN_FAILED when the token function throws', async () => {
    const { server } = await start()
    const url = server.url
    await server.close()
    const lost = await rejection(sendRunSignal(url, 'some-run', 'message', 1, { token: 'rt2.x.y' }))
    expect(lost).toMatchObject({ name: 'RunSignalError', status: 0, code: 'NETWORK_ERROR' })
    const failed = await rejection(
      sendRunSignal(url, 'some-run', 'message', 1, {
        token: () => {
          throw new Error('logged out')
        },
      }),
    )
    expect(failed).toMatchObject({ status: 0, code: 'TOKEN_FAILED', message: expect.stringMatching(/logged out/) })
  })

  it('throws a TypeError naming a bad argument', async () => {
    const token = 'rt2.x.y'
    await expect(sendRunSignal(42 as never, 'r', 'message', 1, { token })).rejects.toThrow(/server must be the task server's URL/)
    await expect(sendRunSignal('', '', 'message', 1, { token })).rejects.toThrow(/runId must be a run id/)
    await expect(sendRunSignal('', 'r', '', 1, { token })).rejects.toThrow(/name must be a signal name/)
    await expect(sendRunSignal('', 'r', 'message', 1, undefined as never)).rejects.toThrow(/options must be an object with token/)
    await expect(sendRunSignal('', 'r', 'message', 1, { token: '' })).rejects.toThrow(/token must be a run token/)
    await expect(sendRunSignal('', 'r', 'message', 1, { token, id: '' })).rejects.toThrow(/id must be a non-empty string/)
    await expect(sendRunSignal('', 'r', 'message', () => 1, { token })).rejects.toThrow(/data must be a JSON value/)
  })
})
