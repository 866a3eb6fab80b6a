// "Wake now" and "Fire now" in a real browser, against `svc dev` on test/fixtures/dashboard-app.
import { describe, expect, it } from 'vitest'
import { dashboardPerTest, trigger } from './_browser.ts'

const ui = dashboardPerTest()

const runPanel = () => ui.page.locator('#run')
const runId = async () => (await runPanel().locator('.run-id').textContent())!
const runStatus = () => runPanel().locator('.status').first().textContent()
const wakeButton = () => runPanel().getByRole('button', { name: 'Wake now' })
const tasksRow = (name: string) => ui.page.getByRole('region', { name: 'Tasks' }).getByRole('row').filter({ hasText: name })

/** Opens run `id` in the run panel, as a link to it does. */
async function openRun(id: string): Promise<void> {
  await ui.page.evaluate((hash) => (location.hash = hash), `#run/${id}`)
  await expect.poll(runId).toBe(id)
}

async function record(id: string): Promise<{ status: string; trigger: string; result?: unknown }> {
  return (await fetch(`${ui.dev.url}/__tasks/${id}`)).json()
}

describe('Wake now', () => {
  it('shows on a run sleeping on ctx.step.sleep; clicking it resumes the run, which completes', async () => {
    const id = await trigger(ui.dev.url, 'jobs.nap', {})
    await openRun(id)
    await expect.poll(() => runPanel().textContent()).toContain('Sleeping until')
    await wakeButton().click()
    await expect.poll(runStatus).toBe('completed')
    expect(await wakeButton().count()).toBe(0)
    expect(await runPanel().locator('div.problems').textContent()).toBe('')
    expect(await record(id)).toMatchObject({ status: 'completed', result: 'rested' })
  })

  it('shows on a delayed run, with when it is due; clicking it starts the run now', async () => {
    const id = await trigger(ui.dev.url, 'jobs.greet', { name: 'Later' }, { 'svc-delay-seconds': '3600' })
    await openRun(id)
    await expect.poll(runStatus).toBe('scheduled')
    expect(await runPanel().locator('dt').allTextContents()).toContain('Due')
    await wakeButton().click()
    await expect.poll(runStatus).toBe('completed')
    await expect.poll(() => runPanel().textContent()).toContain('"Hello, Later"')
  })

  it('does not show on a run waiting on a token, nor on a finished run', async () => {
    const waiting = await trigger(ui.dev.url, 'jobs.approve', {})
    await openRun(waiting)
    await expect.poll(() => runPanel().locator('.token-id').count()).toBe(1)
    expect(await wakeButton().count()).toBe(0)
    const done = await trigger(ui.dev.url, 'jobs.greet', { name: 'Done' })
    await openRun(done)
    await expect.poll(runStatus).toBe('completed')
    expect(await wakeButton().count()).toBe(0)
  })
})

describe('Fire now', () => {
  it('shows for a task with a schedule only; clicking it starts a run as a tick would, and opens it', async () => {
    await expect.poll(() => tasksRow('jobs.nightly').getByRole('button', { name: 'Fire now' }).count()).toBe(1)
    expect(await tasksRow('jobs.greet').getByRole('button', { name: 'Fire now' }).count()).toBe(0)
    expect(await tasksRow('jobs.flaky').getByRole('button', { name: 'Fire now' }).count()).toBe(0)
    await tasksRow('jobs.nightly').getByRole('button', { name: 'Fire now' }).click()
    await expect.poll(() => runPanel().isVisible()).toBe(true)
    await expect.poll(runStatus).toBe('completed')
    const id = await runId()
    expect(await runPanel().locator('dd code').first().textContent()).toBe('jobs.nightly')
    expect(await record(id)).toMatchObject({ status: 'completed', trigger: 'cron', result: { swept: true } })
    expect(await ui.page.getByRole('region', { name: 'Tasks' }).getByRole('alert').textContent()).toBe('')
  })
})
