import assert from 'node:assert/strict'
import { afterEach, beforeEach, test } from 'node:test'
import { setTimeout as delay } from 'node:timers/promises'
import { createTaskRuntime, type RunRecord, type RunStatus, type TaskRuntime, ValidationError } from 'svcjs'
import { SqliteRunStore } from 'svcjs/node'
import * as onboard from '../src/api/jobs/onboard.ts'

// The store svc dev and the built server use, on a database in memory.
let store: SqliteRunStore
let runtime: TaskRuntime
beforeEach(() => {
  store = new SqliteRunStore({ path: ':memory:' })
  runtime = createTaskRuntime({ routes: [{ path: '/api/jobs/onboard', module: onboard }], store })
})
afterEach(async () => {
  await runtime.close()
  store.close()
})

/** The run once it stops moving: suspended on a wait, or finished. */
async function settled(id: string): Promise<RunRecord> {
  for (;;) {
    const run = await runtime.getRun(id)
    if (run && !MOVING.includes(run.status)) return run
    await delay(10)
  }
}
const MOVING: RunStatus[] = ['scheduled', 'queued', 'running']

test('onboarding welcomes the user, then sleeps for a day', async () => {
  const { id } = await runtime.trigger('jobs.onboard', { email: 'ada@example.com' })
  const run = await settled(id)
  assert.equal(run.status, 'suspended')
  assert.equal(run.steps['send-welcome'].status, 'completed')
  assert.equal(run.suspended?.stepKey, 'wait-a-day')
  assert.equal(run.steps['send-tips'], undefined)
})

test('onboarding refuses an input that is not an email', async () => {
  await assert.rejects(runtime.trigger('jobs.onboard', { email: 'ada' }), ValidationError)
})
