// A runtime schedule's tick that comes due while no process runs starts its
// run once: a process makes a schedule and dies by SIGKILL; the tick's timer
// is then set due in the past, as a tick missed during the downtime would
// be; two processes start on the shared SQLite file at once, and of the two
// exactly one runs the tick.
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import { fileURLToPath } from 'node:url'
import { afterAll, expect, it } from 'vitest'
import type { RunRecord } from '../../src/types.ts'
import { runScript } from './_script.ts'

const SCRIPT = fileURLToPath(new URL('../fixtures/schedule-crash/child.ts', import.meta.url))
const dir = mkdtempSync(join(tmpdir(), 'svc-schedule-crash-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
const db = join(dir, 'runs.db')
const out = join(dir, 'out.json')

const child = (mode: 'make' | 'resume') => runScript(SCRIPT, [db, out, mode], 30_000)

it('runs a tick missed while every process was down once, on one of two processes that start together', async () => {
  const made = await child('make')
  expect(made.signal, made.out).toBe('SIGKILL')
  const { id } = JSON.parse(readFileSync(out, 'utf8')) as { id: string }
  // The tick came due ten seconds ago, while nothing ran.
  const tick = new Date(Date.now() - 10_000).toISOString()
  const raw = new DatabaseSync(db)
  const moved = raw
    .prepare(`UPDATE svc_timers SET due_at = ?, record = json_set(record, '$.dueAt', ?) WHERE id = ?`)
    .run(tick, tick, `${id}:schedule`)
  expect(moved.changes).toBe(1)
  raw.close()
  writeFileSync(out, JSON.stringify({ id, tick }))

  const [a, b] = await Promise.all([child('resume'), child('resume')])
  expect([a.code, b.code], a.out + b.out).toEqual([0, 0])
  const seen = readdirSync(dir).filter((name) => name.startsWith('out.json.'))
  expect(seen).toHaveLength(2)
  for (const name of seen) {
    const runs = JSON.parse(readFileSync(join(dir, name), 'utf8')) as RunRecord[]
    const ofTick = runs.filter((run) => run.schedule?.tick === tick)
    expect(ofTick).toHaveLength(1)
    expect(ofTick[0]).toMatchObject({ status: 'completed', trigger: 'cron', schedule: { id, tick }, result: { input: { n: 1 } } })
  }
}, 60_000)
