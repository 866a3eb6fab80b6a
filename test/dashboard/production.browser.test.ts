// The runs dashboard outside development: off unless enabled, and once enabled, a page that
// holds no data until the user enters the task secret, kept in sessionStorage only.
import type { Browser, Page, Request } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { loadApiRoutes, type SvcServer, startSvcServer } from '../../src/node.ts'
import { FIXTURE, launchChromium, trigger } from './_browser.ts'

const SECRET = 'correct horse battery staple, twice over'
let browser: Browser
let server: SvcServer
let off: SvcServer

beforeAll(async () => {
  const apiRoutes = await loadApiRoutes({ root: FIXTURE })
  const env = { NODE_ENV: 'production', SVC_TASK_SECRET: SECRET }
  ;[browser, server, off] = await Promise.all([
    launchChromium(),
    startSvcServer({ apiRoutes, pages: [], port: 0, host: '127.0.0.1', env, dashboard: true }),
    startSvcServer({ apiRoutes, pages: [], port: 0, host: '127.0.0.1', env }),
  ])
}, 60_000)
afterAll(async () => {
  await Promise.all([browser?.close(), server?.close(), off?.close()])
})

/** Opens the dashboard, recording every answer the page got from the admin surface. */
async function open(): Promise<{ page: Page; answers: { url: string; status: number }[] }> {
  const page = await browser.newPage()
  const answers: { url: string; status: number }[] = []
  page.on('requestfinished', async (request: Request) => {
    const response = await request.response()
    if (response && !request.url().endsWith('/__svc/dashboard')) answers.push({ url: request.url(), status: response.status() })
  })
  await page.goto(`${server.url}/__svc/dashboard`)
  return { page, answers }
}

describe('the runs dashboard in production', () => {
  it('is not served unless enabled', async () => {
    expect((await fetch(`${off.url}/__svc/dashboard`)).status).toBe(404)
  })

  it('shows nothing but the sign-in form until the secret is entered, then the tasks and runs', async () => {
    const id = await trigger(server.url, 'jobs.greet', { name: 'prod' }, { authorization: `Bearer ${SECRET}` })
    const { page, answers } = await open()
    await page.getByLabel('Task secret').waitFor()
    expect(await page.getByRole('table').count()).toBe(0)
    expect(await page.getByRole('heading', { name: 'Tasks' }).count()).toBe(0)
    expect(await page.locator('main').textContent()).not.toContain('jobs.greet')
    await expect.poll(() => answers.length).toBeGreaterThan(0)
    expect(answers.every((answer) => answer.status === 401)).toBe(true)

    await page.getByLabel('Task secret').fill('wrong')
    await page.getByRole('button', { name: 'Sign in' }).click()
    await expect.poll(() => page.getByRole('alert').textContent()).toContain('does not match the task secret')
    expect(await page.getByRole('table').count()).toBe(0)

    await page.getByLabel('Task secret').fill(SECRET)
    await page.getByRole('button', { name: 'Sign in' }).click()
    const tasks = page.getByRole('region', { name: 'Tasks' }).getByRole('table')
    await expect.poll(() => tasks.getByRole('rowheader').count()).toBe(7)
    const row = page.getByRole('region', { name: 'Runs' }).getByRole('row').filter({ hasText: id })
    await expect.poll(() => row.locator('.status').textContent()).toBe('completed')
    // The event stream is read with the bearer header too.
    await expect.poll(() => page.locator('#live').textContent()).toBe('live')

    // The secret is in this tab's sessionStorage, and nowhere a URL, a cookie or localStorage would carry it.
    expect(await page.evaluate(() => Object.values(sessionStorage))).toEqual([SECRET])
    expect(await page.evaluate(() => localStorage.length)).toBe(0)
    expect(await page.context().cookies()).toEqual([])
    expect(page.url()).not.toContain(encodeURIComponent(SECRET).slice(0, 7))
    expect(answers.some((answer) => answer.url.includes('correct'))).toBe(false)
    await page.close()
  })

  it('keeps the secret for the tab across a reload, and forgets it on sign-out', async () => {
    const { page } = await open()
    await page.getByLabel('Task secret').fill(SECRET)
    await page.getByRole('button', { name: 'Sign in' }).click()
    await page.getByRole('region', { name: 'Tasks' }).waitFor()
    await page.reload()
    await page.getByRole('region', { name: 'Tasks' }).waitFor()
    await page.getByRole('button', { name: 'Sign out' }).click()
    await page.getByLabel('Task secret').waitFor()
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0)
    expect(await page.getByRole('table').count()).toBe(0)
    await page.close()
  })
})
