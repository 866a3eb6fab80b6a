// A callback received just before the server dies (SIGKILL right after its
// 202, the run still running past its wait) resumes its run once after a
// restart: the request is kept, the run completes with it, and the step
// that handed the URL out does not run again.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { firstLineOf } from './_script.ts'
import { afterAll, expect, it } from 'vitest'

const SCRIPT = fileURLToPath(new URL('../fixtures/callback-crash/server.ts', import.meta.url))
const dir = mkdtempSync(join(tmpdir(), 'svc-callback-crash-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
const [db, effects] = ['runs.db', 'effects.txt'].map((name) => join(dir, name))

/** The child for `mode`, and its first line on stdout, parsed. */
const child = (mode: 'start' | 'resume') => firstLineOf(SCRIPT, [db, effects, mode])

it('resumes once, after a restart, the run whose callback was answered 202 just before a SIGKILL', async () => {
  const started = await child('start')
  const { runId, callback } = started.first as { runId: string; callback: string }
  const res = await fetch(callback, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"amount":7}' })
  started.proc.kill('SIGKILL')
  expect(res.status).toBe(202)
  expect((await started.exited).signal).toBe('SIGKILL')

  const resumed = await child('resume')
  expect(resumed.first).toMatchObject({ id: runId, status: 'completed', result: { method: 'POST', body: { amount: 7 } } })
  expect((await resumed.exited).code).toBe(0)
  expect(readFileSync(effects, 'utf8').trim().split('\n')).toEqual([runId])
}, 60_000)
