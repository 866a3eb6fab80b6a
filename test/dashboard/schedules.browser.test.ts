// The dashboard's Schedules section in a real browser, against `svc dev` on test/fixtures/dashboard-app.
import { describe, expect, it } from 'vitest'
import { dashboardPerTest } from './_browser.ts'

const ui = dashboardPerTest()

const section = () => ui.page.getByRole('region', { name: 'Schedules' })
const rows = () => section().locator('table.schedules tbody tr')

describe('runtime schedules in the dashboard', () => {
  it('makes a schedule from the form, pauses and resumes it, runs it now and deletes it', async () => {
    await expect.poll(() => section().textContent()).toContain('No schedules yet')
    await section().getByLabel('Task').selectOption('jobs.greet')
    await section().getByLabel('Cron').fill('0 9 * * 1')
    await section().getByLabel('Time zone').fill('Europe/Paris')
    await section().getByLabel('Payload of each run (JSON)').fill('{ "name": "Ada" }')
    await section().getByLabel('Key').fill('ada')
    await section().getByRole('button', { name: 'Make schedule' }).click()
    await expect.poll(() => rows().count()).toBe(1)
    const row = rows().first()
    expect(await row.locator('th, td').allTextContents()).toEqual(
      expect.arrayContaining(['jobs.greet', '0 9 * * 1', 'Europe/Paris', 'ada']),
    )
    expect(await row.locator('time').getAttribute('datetime')).toMatch(/^\d{4}-\d\d-\d\dT0[78]:00:00\.000Z$/)

    await row.getByRole('button', { name: 'Pause' }).click()
    await expect.poll(() => row.textContent()).toContain('paused')
    await row.getByRole('button', { name: 'Resume' }).click()
    await expect.poll(() => row.getByRole('button', { name: 'Pause' }).count()).toBe(1)

    await row.getByRole('button', { name: 'Run now' }).click()
    const run = ui.page.locator('#run')
    await expect.poll(() => run.locator('.status').first().textContent()).toBe('completed')
    expect(await run.textContent()).toContain('"Hello, Ada"')
    expect(await run.locator('dd code').first().textContent()).toBe('jobs.greet')
    // The run now shows as the schedule's last.
    await expect.poll(() => row.locator('td a').count()).toBe(1)

    // Closed, the run's panel goes, and the address no longer names the run.
    await run.getByRole('button', { name: 'Close' }).click()
    await expect.poll(() => run.isHidden()).toBe(true)
    expect(new URL(ui.page.url()).hash).toBe('')
    await row.getByRole('button', { name: 'Delete' }).click()
    await expect.poll(() => section().textContent()).toContain('No schedules yet')
  })

  it('shows why the server refused a schedule, and keeps the form as it was', async () => {
    await section().getByLabel('Task').selectOption('jobs.greet')
    await section().getByLabel('Cron').fill('every monday')
    await section().getByLabel('Payload of each run (JSON)').fill('{ "name": "Ada" }')
    await section().getByRole('button', { name: 'Make schedule' }).click()
    await expect.poll(() => section().getByRole('alert').allTextContents()).toContainEqual(expect.stringContaining('INVALID_SCHEDULE'))
    expect(await section().getByLabel('Cron').inputValue()).toBe('every monday')
    expect(await rows().count()).toBe(0)
  })
})
