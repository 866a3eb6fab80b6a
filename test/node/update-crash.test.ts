// An update cut off by SIGKILL is answered once after a restart, and a
// request again with its id gets that answer: whether the process died
// with the answer kept but not yet returned (`kept`), or in the update's
// handler after its step was recorded (`cut`). The handler's step does not
// run again, and the run, given its earlier update again on the replay,
// ends with it.
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { firstLineOf } from './_script.ts'
import { afterAll, describe, expect, it } from 'vitest'
import { until } from '../tasks/_helpers.ts'

const SCRIPT = fileURLToPath(new URL('../fixtures/update-crash/server.ts', import.meta.url))
const SECRET = 'update-crash-secret-0123456789abcdef'
const dir = mkdtempSync(join(tmpdir(), 'svc-update-crash-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const headers = { authorization: `Bearer ${SECRET}`, 'content-type': 'application/json' }
const sendUpdate = (server: string, runId: string) =>
  fetch(`${server}/__tasks/runs/${runId}/updates/add`, {
    method: 'POST',
    headers: { ...headers, 'idempotency-key': 'u-1' },
    body: '"apple"',
  })

describe('an update cut off by a SIGKILL', () => {
  for (const where of ['kept', 'cut'] as const) {
    it(`is answered once after a restart (${where === 'kept' ? 'its answer kept, not returned' : 'killed in its handler'})`, async () => {
      const files = [join(dir, `${where}.db`), join(dir, `${where}.txt`), join(dir, `${where}.marker`)]
      const started = await firstLineOf(SCRIPT, [...files, 'start', where])
      const { runId, server } = started.first as { runId: string; server: string }
      const first = sendUpdate(server, runId).then(
        (res) => res.status,
        () => 'cut off',
      )
      await until(() => existsSync(files[2]), 10_000)
      started.proc.kill('SIGKILL')
      expect((await started.exited).signal).toBe('SIGKILL')
      expect(await first).toBe('cut off')

      const resumed = await firstLineOf(SCRIPT, [...files, 'resume', where])
      try {
        const again = resumed.first.server as string
        const res = await sendUpdate(again, runId)
        expect(res.status).toBe(200)
        expect(await res.json()).toEqual({ id: 'u-1', runId, name: 'add', status: 'completed', result: { count: 1 } })
        const signalled = await fetch(`${again}/__tasks/runs/${runId}/signals/checkout`, { method: 'POST', headers })
        expect(signalled.status).toBe(202)
        const run = await until(async () => {
          const body = await (await fetch(`${again}/__tasks/runs/${runId}`, { headers })).json()
          return body.status === 'completed' ? body : undefined
        }, 10_000)
        expect(run.result).toEqual(['apple'])
        expect(readFileSync(files[1], 'utf8').trim().split('\n')).toEqual(['apple'])
      } finally {
        resumed.proc.kill('SIGKILL')
        await resumed.exited
      }
    }, 60_000)
  }
})
