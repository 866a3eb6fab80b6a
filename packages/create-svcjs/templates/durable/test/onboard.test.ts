import assert from 'node:assert/strict'
import { afterEach, beforeEach, test } from 'node:test'
import { ValidationError } from 'svcjs'
import { createTestRuntime, type TestRuntime } from 'svcjs/testing'

// The app's tasks on svc's own engine, with a clock the test moves: the day
// this task sleeps takes a millisecond here (docs/testing.md in svc).
let t: TestRuntime
beforeEach(async () => {
  t = await createTestRuntime({ root: '.' })
  // Stand in for the email provider: the steps record what the mocks return.
  t.mockStep('jobs.onboard', 'send-welcome', { to: 'ada@example.com', subject: 'Welcome!' })
  t.mockStep('jobs.onboard', 'send-tips', { to: 'ada@example.com', subject: 'Three things to try' })
})
afterEach(() => t.close())

test('onboarding welcomes the user, sleeps for a day, then sends tips', async () => {
  const run = await t.run('jobs.onboard', { email: 'ada@example.com' })
  assert.equal(run.status, 'completed')
  assert.deepEqual(Object.keys(run.steps), ['create-account', 'send-welcome', 'wait-a-day', 'send-tips'])
  // A day later by the test's clock, and the replay after the sleep sent no second welcome.
  assert.equal(Date.parse(run.finishedAt!) - Date.parse(run.createdAt), 24 * 60 * 60 * 1000)
  assert.equal(t.stepCalls('jobs.onboard', 'send-welcome'), 1)
})

test('a day is a day: the tips wait until it is over', async () => {
  const run = await t.trigger('jobs.onboard', { email: 'ada@example.com' })
  assert.equal(run.suspended?.stepKey, 'wait-a-day')
  await t.advance('23h')
  assert.equal((await t.getRun(run.id))?.status, 'suspended')
  await t.advance('1h')
  assert.equal((await t.getRun(run.id))?.status, 'completed')
})

test('a welcome email that fails is sent again after the backoff', async () => {
  let tries = 0
  t.mockStep('jobs.onboard', 'send-welcome', () => {
    if (++tries === 1) throw new Error('the email provider is down')
    return { to: 'ada@example.com', subject: 'Welcome!' }
  })
  const started = await t.trigger('jobs.onboard', { email: 'ada@example.com' })
  const waiting = await t.waitingOn(started.id)
  assert.equal(waiting?.kind, 'retry')
  await t.advanceUntilIdle()
  const run = await t.getRun(started.id)
  assert.equal(run?.status, 'completed')
  assert.equal(run?.attempts.length, 2)
  assert.match(run?.attempts[0].error ?? '', /the email provider is down/)
  assert.equal(tries, 2)
})

test('onboarding refuses an input that is not an email', async () => {
  await assert.rejects(t.trigger('jobs.onboard', { email: 'ada' }), ValidationError)
})
