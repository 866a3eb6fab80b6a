// A SQLite file written by the release before svc's tables took the `svc_`
// prefix (schema version 11: `runs`, `events`, …), with runs asleep and
// waiting in it (test/fixtures/sqlite-v11/), opened by this release: its
// tables are renamed in place, and every run in it completes without a
// recorded step running again.
import { readFileSync } from 'node:fs'
import { expect, it } from 'vitest'
import { SCHEMA_VERSION } from '../../src/sqlite/database.ts'
import { until } from '../tasks/_helpers.ts'
import { AUTH, getRun, napsCompleted, releasedFile, schema } from './_released-file.ts'

const file = releasedFile('sqlite-v11')

it("renames a version-11 file's tables in place, and its sleeping and waiting runs complete without a recorded step running again", async () => {
  const { db, effects, start } = file()
  const before = schema(db)
  expect(before.version).toBe(11)
  expect(before.names).toContain('events')

  const base = await start()
  // The naps' sleeps ended long ago: each wakes on the new process and runs step b, and only step b.
  const held = await napsCompleted(base)
  expect(held.map((run) => `${run.taskName}:${run.status}`).sort()).toEqual([
    'approval:suspended',
    'hello:completed',
    'nap:completed',
    'nap:completed',
    'nap:completed',
    'paid:suspended',
  ])
  const approval = await getRun(base, held.find((run) => run.taskName === 'approval')!.id)
  const paid = held.find((run) => run.taskName === 'paid')!
  const tokenId = (approval.suspended!.waitpoint as { tokenId: string }).tokenId
  const completed = await fetch(`${base}/__tasks/tokens/${encodeURIComponent(tokenId)}`, {
    method: 'POST',
    headers: AUTH,
    body: JSON.stringify({ approved: true }),
  })
  expect(completed.status).toBe(200)
  // The event of order 1 the file holds does not meet the wait; order 7 does.
  const sent = await fetch(`${base}/__events/order.paid`, { method: 'POST', headers: AUTH, body: JSON.stringify({ order: 7 }) })
  expect(sent.status).toBe(202)
  const [approved, met] = await Promise.all(
    [approval.id, paid.id].map((id) =>
      until(async () => {
        const run = await getRun(base, id)
        return run.status === 'completed' ? run : undefined
      }, 10_000),
    ),
  )
  expect(approved.result).toEqual({ a: 'APPROVAL-A', answer: { payload: { approved: true } } })
  expect(met.result).toMatchObject({ a: 'PAID-A', paid: { event: { name: 'order.paid', data: { order: 7 } } } })
  const events = (await (await fetch(`${base}/__events`, { headers: AUTH })).json()) as { events: { name: string; size: number }[] }
  expect(events.events.map((event) => event.name)).toEqual(['order.paid', 'order.paid'])
  expect(readFileSync(effects, 'utf8').split('\n').filter(Boolean).sort()).toEqual(['nap-b', 'nap-b', 'nap-b'])

  const after = schema(db)
  expect(after.version).toBe(SCHEMA_VERSION)
  expect(after.names.filter((name) => !name.startsWith('svc_') && !name.startsWith('sqlite_'))).toEqual([])
  expect(after.names).toEqual(
    expect.arrayContaining(['svc_runs', 'svc_steps', 'svc_timers', 'svc_tokens', 'svc_events', 'svc_runs_by_key', 'svc_events_by_name']),
  )
})
