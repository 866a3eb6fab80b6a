/**
 * A runtime schedule on a Postgres two engines share (two stores, as two
 * processes would hold them): made on one, its tick comes due (its timer is
 * set due in the past, as a tick that passed while nothing swept would
 * be), and of the two engines exactly one starts its run; made on either,
 * both list it, and a pause on one stops the other's ticks.
 */
import postgres from 'postgres'
import { afterAll, expect, it } from 'vitest'
import { createTaskRuntime, type TaskRuntime } from '../../src/index.ts'
import { PostgresRunStore } from '../../src/postgres.ts'
import { until } from '../_helpers.ts'
import { createDatabase } from './_pg.ts'

const ROUTES = [{ path: '/api/tick', module: { route: { kind: 'task' as const }, POST: () => 'ticked' } }]
const closing: (() => Promise<void>)[] = []
afterAll(async () => {
  for (const close of closing.reverse()) await close()
})

async function engine(url: string): Promise<TaskRuntime> {
  const store = new PostgresRunStore({ url })
  const rt = createTaskRuntime({ store, routes: ROUTES, logger: { info: () => {}, warn: () => {}, error: console.error } })
  await rt.recover()
  closing.push(async () => {
    await rt.close()
    await store.close()
  })
  return rt
}

it('starts the run of a tick once across two engines, and both see the schedule and its pause', async () => {
  const url = await createDatabase('schedules_two')
  const db = postgres(url, { onnotice: () => {} })
  closing.push(() => db.end())
  const [a, b] = [await engine(url), await engine(url)]
  const made = await a.schedules!.create({ task: 'tick', cron: '* * * * *' })
  expect((await b.schedules!.list()).map((s) => s.id)).toEqual([made.id])

  const tick = new Date(Date.now() - 5_000).toISOString()
  const moved =
    await db`UPDATE svc.timers SET due_at = ${tick}, record = jsonb_set(record, '{dueAt}', to_jsonb(${tick}::text)) WHERE id = ${`${made.id}:schedule`}`
  expect(moved.count).toBe(1)
  // Either engine's sweep may claim it; the run of the tick finishes once.
  const ran = await until(async () => {
    const runs = (await a.listRuns({ taskName: 'tick' })).filter((run) => run.schedule?.tick === tick)
    return runs.length > 0 && runs.every((run) => run.status === 'completed') ? runs : undefined
  })
  expect(ran).toHaveLength(1)
  // Kept on the schedule once the run is recorded (the run may finish first).
  expect(await until(async () => (await b.schedules!.get(made.id))?.lastTick === tick && b.schedules!.get(made.id))).toMatchObject({
    lastTick: tick,
    lastRunId: ran[0].id,
  })

  // Paused on b, a's sweeps start nothing for it, however due its timer.
  await b.schedules!.pause(made.id)
  expect(await db`SELECT id FROM svc.timers WHERE id = ${`${made.id}:schedule`}`).toHaveLength(0)
  expect(await a.schedules!.get(made.id)).toMatchObject({ enabled: false, nextAt: null })
}, 30_000)
