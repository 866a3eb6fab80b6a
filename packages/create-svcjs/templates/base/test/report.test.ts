import assert from 'node:assert/strict'
import { afterEach, beforeEach, test } from 'node:test'
import { createTaskRuntime, type TaskRuntime } from 'svcjs'
import * as report from '../src/api/jobs/report.ts'

// Runs are kept in memory here; svc dev and the built server keep them in .svc/runs.db.
let runtime: TaskRuntime
beforeEach(() => {
  runtime = createTaskRuntime({ routes: [{ path: '/api/jobs/report', module: report }] })
})
afterEach(() => runtime.close())

test('the report task runs its steps and returns the summary', async () => {
  const { id } = await runtime.trigger('jobs.report')
  const run = await runtime.waitForRun(id)
  assert.equal(run.status, 'completed')
  assert.deepEqual(run.result, { signups: 3, summary: '3 new sign-ups' })
  assert.deepEqual(Object.keys(run.steps), ['count-signups', 'summarize'])
})

test('the report task fires on its schedule', async () => {
  const [started] = await runtime.runScheduled(report.schedule)
  assert.equal(started.trigger, 'cron')
  assert.equal((await runtime.waitForRun(started.id)).status, 'completed')
})
