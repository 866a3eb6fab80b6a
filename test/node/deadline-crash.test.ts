// Deadlines survive a kill: a process starts three runs with a deadline 2 s
// away (one waiting on a token, one asleep for a day, one in a step that
// never ends) and dies by SIGKILL. The deadline timer of the token's run is
// then deleted from the file, as a crash between recording the run and its
// timer would leave it. A new process, started after the deadline, fails
// all three with DEADLINE_EXCEEDED at once, and runs no step again.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import { fileURLToPath } from 'node:url'
import { afterAll, expect, it } from 'vitest'
import type { RunRecord } from '../../src/types.ts'
import { runScript } from './_script.ts'

const SCRIPT = fileURLToPath(new URL('../fixtures/deadline-crash/child.ts', import.meta.url))
const dir = mkdtempSync(join(tmpdir(), 'svc-deadline-crash-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
const db = join(dir, 'runs.db')
const effects = join(dir, 'effects.log')
const idsFile = join(dir, 'ids.json')

const child = (mode: 'start' | 'resume') => runScript(SCRIPT, [db, effects, idsFile, mode])

it('applies deadlines that passed while every process was down, a lost deadline timer too, and runs no step again', async () => {
  writeFileSync(effects, '')
  const first = await child('start')
  expect(first.signal, first.out).toBe('SIGKILL')
  const { approval, deadline } = JSON.parse(readFileSync(idsFile, 'utf8')) as { approval: string; deadline: string }
  const raw = new DatabaseSync(db)
  expect(raw.prepare('DELETE FROM svc_timers WHERE id = ?').run(`${approval}:deadline`).changes).toBe(1)
  raw.close()
  // Down until the deadlines (each 2 s from its run's creation, the busy run's last) have passed.
  await new Promise((resolve) => setTimeout(resolve, Math.max(0, Date.parse(deadline) - Date.now() + 200)))
  const began = Date.now()
  const second = await child('resume')
  expect(second.code, second.out).toBe(0)
  expect(Date.now() - began).toBeLessThan(15_000)
  const { records } = JSON.parse(readFileSync(idsFile, 'utf8')) as { records: RunRecord[] }
  for (const run of records) {
    expect(run.status).toBe('failed')
    expect(Date.parse(run.finishedAt!)).toBeGreaterThanOrEqual(Date.parse(run.deadline!))
    expect(run.attempts.at(-1)).toMatchObject({ code: 'DEADLINE_EXCEEDED' })
    // Failed once, at the deadline: none of the three retries ran.
    expect(run.attempts).toHaveLength(1)
  }
  // The step that was running at the kill did not start again.
  expect(readFileSync(effects, 'utf8')).toBe('busy-work\n')
}, 60_000)
