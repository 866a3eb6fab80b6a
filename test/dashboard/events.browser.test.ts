// The dashboard's Events view in a real browser, against a real server: an event sent from
// the form starts a task that is on it and resumes a run that waits for it, and the list
// shows both; a refused send shows why; the list filters by name and pages with Load more;
// an event's data is read only when the user opens it, and a burst of run changes reads
// the list at most once a second.
import type { Browser, Page } from 'playwright-core'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import type { RuntimeApiRoute, TaskContext } from '../../src/index.ts'
import { type SvcServer, startSvcServer } from '../../src/node.ts'
import { launchChromium, trigger } from './_browser.ts'

const routes: RuntimeApiRoute[] = [
  { path: '/api/orders/receipt', module: { route: { kind: 'task', on: 'order.paid' }, POST: (ctx: TaskContext) => ctx.input } },
  {
    path: '/api/orders/fulfil',
    module: {
      route: { kind: 'task' },
      POST: (ctx: TaskContext<{ orderId: string }>) =>
        ctx.step.waitForEvent('paid', 'order.paid', { match: { orderId: ctx.input.orderId } }),
    },
  },
]

let browser: Browser
let server: SvcServer
let page: Page
let pageErrors: string[]

beforeAll(async () => {
  ;[browser, server] = await Promise.all([
    launchChromium(),
    startSvcServer({ apiRoutes: routes, pages: [], port: 0, host: '127.0.0.1', env: { NODE_ENV: 'development' }, dashboard: true }),
  ])
}, 60_000)
afterAll(async () => {
  await Promise.all([browser?.close(), server?.close()])
})
beforeEach(async () => {
  page = await browser.newPage()
  pageErrors = []
  page.on('pageerror', (error) => pageErrors.push(error.message))
  await page.goto(`${server.url}/__svc/dashboard`)
})
afterEach(async () => {
  await page.close()
  // An uncaught error in the page fails the test that caused it.
  expect(pageErrors).toEqual([])
})

const events = () => page.getByRole('region', { name: 'Events', exact: true })
const sendRegion = () => page.getByRole('region', { name: 'Send an event' })

async function sendFromPage(name: string, data: string, id = ''): Promise<void> {
  await sendRegion().getByLabel('Name').fill(name)
  await sendRegion().getByLabel('Data (JSON, optional)').fill(data)
  await sendRegion().getByLabel('Id (optional)').fill(id)
  await sendRegion().getByRole('button', { name: 'Send' }).click()
}

describe('the Events view of the dashboard', () => {
  it('sends an event from the form; the list shows the run it started and the wait it resumed', async () => {
    const waiting = await trigger(server.url, 'orders.fulfil', { orderId: 'o-7' })
    await expect.poll(async () => (await server.runtime.getRun(waiting))?.status).toBe('suspended')

    await sendFromPage('order.paid', '{ "orderId": "o-7" }', 'evt-browser')
    await expect.poll(() => sendRegion().getByRole('status').textContent()).toBe('Sent evt-browser: 1 run started, 1 wait resumed.')

    const table = events().getByRole('table')
    await expect
      .poll(() => table.getByRole('columnheader').allTextContents())
      .toEqual(['Time', 'Name', 'Id', 'Data', 'Runs started', 'Waits resumed'])
    const row = table.getByRole('row').filter({ hasText: 'evt-browser' })
    await expect.poll(() => row.getByRole('cell').nth(1).textContent()).toBe('order.paid')
    const started = row.getByRole('link', { name: 'orders.receipt' })
    await expect.poll(() => row.locator('.status').first().textContent()).toBe('completed')
    const resumed = row.getByRole('link', { name: waiting.slice(0, 8) })
    expect(await resumed.getAttribute('title')).toBe(waiting)
    const receiptId = (await started.getAttribute('title'))!
    expect((await server.runtime.getRun(receiptId))?.taskName).toBe('orders.receipt')

    // A run started links to its run view.
    await started.click()
    await expect.poll(() => page.locator('#run .run-id').textContent()).toBe(receiptId)
    await expect.poll(async () => (await server.runtime.getRun(waiting))?.status).toBe('completed')
  })

  it('shows why a send was refused, and says when the data is not JSON before sending it', async () => {
    await sendFromPage('no spaces allowed', '')
    const alert = sendRegion().getByRole('alert')
    await expect.poll(() => alert.textContent()).toContain('INVALID_EVENT')
    await expect.poll(() => alert.textContent()).toContain('an event name is 1 to 128 letters')
    await sendFromPage('order.paid', '{ orderId: 1 }')
    await expect.poll(() => alert.textContent()).toContain('The data is not JSON')
    expect(await sendRegion().getByRole('status').textContent()).toBe('')
  })

  it('filters by name, and pages with Load more until the last page', async () => {
    const batch = Array.from({ length: 60 }, (_, i) => ({ name: 'page.test', data: i, id: `page-${i}` }))
    const sent = await fetch(`${server.url}/__events`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(batch),
    })
    expect(sent.status).toBe(202)
    await page.reload()
    await events().getByLabel('Event name').fill('page.test')
    await events().getByLabel('Event name').press('Enter')
    const rows = () => events().locator('tbody tr')
    await expect.poll(() => rows().count()).toBe(50)
    expect(await rows().first().getAttribute('data-event')).toBe('page-59')
    await events().getByRole('button', { name: 'Load more' }).click()
    await expect.poll(() => rows().count()).toBe(60)
    expect(await rows().last().getAttribute('data-event')).toBe('page-0')
    expect(await events().getByRole('button', { name: 'Load more' }).isHidden()).toBe(true)

    await events().getByLabel('Event name').fill('nothing.sent')
    await events().getByLabel('Event name').press('Enter')
    await expect.poll(() => events().textContent()).toContain('No events match.')
  })

  it("reads an event's data only when the user opens it", async () => {
    const sent = await fetch(`${server.url}/__events`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify([
        { name: 'data.test', data: { orderId: 'o-42', lines: [1, 2] }, id: 'with-data' },
        { name: 'data.test', id: 'without-data' },
      ]),
    })
    expect(sent.status).toBe(202)
    const reads: string[] = []
    page.on('request', (request) => {
      const path = new URL(request.url()).pathname
      if (path.startsWith('/__events/')) reads.push(path)
    })
    await page.reload()
    const row = (id: string) => events().locator(`tr[data-event="${id}"]`)
    const show = row('with-data').getByRole('button', { name: /^Show data \(\d+ B\)$/ })
    await expect.poll(() => show.count()).toBe(1)
    expect(await row('without-data').locator('td.data').textContent()).toBe('none')
    expect(reads).toEqual([])

    await show.click()
    await expect.poll(() => row('with-data').locator('td.data').textContent()).toContain('"o-42"')
    expect(reads).toEqual(['/__events/with-data'])
    // A refresh of the list keeps it open without reading it again.
    await trigger(server.url, 'orders.receipt', {})
    await expect.poll(() => row('with-data').locator('td.data').textContent()).toContain('"o-42"')
    expect(reads).toEqual(['/__events/with-data'])
  })

  it('reads the list again at most once a second under a burst of run changes', async () => {
    await expect.poll(() => events().locator('table, p.muted').count()).toBeGreaterThan(0)
    const listed: number[] = []
    page.on('request', (request) => {
      if (new URL(request.url()).pathname === '/__events' && request.method() === 'GET') listed.push(Date.now())
    })
    const began = Date.now()
    // About 100 runs over 2.5 seconds, each changing several times.
    while (Date.now() - began < 2500) {
      await server.runtime.trigger('orders.receipt', {})
      await new Promise((resolve) => setTimeout(resolve, 25))
    }
    await new Promise((resolve) => setTimeout(resolve, 1200))
    // Counted, not timed apart: the page's requests reach this process
    // with jitter, but once a second over the whole burst is a bound on
    // their number (unthrottled, each 50 ms batch of changes read it).
    const seconds = (Date.now() - began) / 1000
    expect(listed.length).toBeGreaterThanOrEqual(2)
    expect(listed.length).toBeLessThanOrEqual(Math.floor(seconds) + 1)
  })
})
