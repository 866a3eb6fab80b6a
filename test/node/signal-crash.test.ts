// A signal answered 202 just before the server dies (SIGKILL right after
// the answer) is delivered once after a restart: to the run that was
// waiting for it (and had resumed, still running past its wait), or to the
// run that was busy before its wait and takes it when it gets there. The
// step before the wait does not run again, and the signal is taken once.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { firstLineOf } from './_script.ts'
import { afterAll, describe, expect, it } from 'vitest'

const SCRIPT = fileURLToPath(new URL('../fixtures/signal-crash/server.ts', import.meta.url))
const SECRET = 'signal-crash-secret-0123456789abcdef'
const dir = mkdtempSync(join(tmpdir(), 'svc-signal-crash-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

/** The child for `mode`, and its first line on stdout, parsed. */
const child = (files: string[], mode: 'start' | 'resume', where: 'waiting' | 'busy') => firstLineOf(SCRIPT, [...files, mode, where])

describe('a signal answered just before a SIGKILL', () => {
  for (const where of ['waiting', 'busy'] as const) {
    it(`is delivered once after a restart, to a run that was ${where === 'waiting' ? 'waiting for it' : 'busy before its wait'}`, async () => {
      const files = [join(dir, `${where}.db`), join(dir, `${where}.txt`)]
      const started = await child(files, 'start', where)
      const { runId, server } = started.first as { runId: string; server: string }
      const res = await fetch(`${server}/__tasks/runs/${runId}/signals/answer`, {
        method: 'POST',
        headers: { authorization: `Bearer ${SECRET}`, 'content-type': 'application/json', 'idempotency-key': 'a-1' },
        body: '{"text":"yes"}',
      })
      started.proc.kill('SIGKILL')
      expect(res.status).toBe(202)
      expect((await started.exited).signal).toBe('SIGKILL')

      const resumed = await child(files, 'resume', where)
      const { run, signals } = resumed.first
      expect(run).toMatchObject({ id: runId, status: 'completed', result: { id: 'a-1', name: 'answer', data: { text: 'yes' } } })
      expect(signals).toEqual([expect.objectContaining({ id: 'a-1', takenBy: `${runId}:answer:signal` })])
      expect((await resumed.exited).code).toBe(0)
      expect(readFileSync(files[1], 'utf8').trim().split('\n')).toEqual([runId])
    }, 60_000)
  }
})
