// A run's updates in the dashboard, in a real browser against a real server: data that is not
// JSON is refused before anything is sent; a send shows the run's answer, and the Updates list
// shows it with its status and times; a handler that throws, bad data and a name with no handler
// show the server's code and message; an id sent again gets the one answer; a handler slower
// than the request's wait shows the update pending; a finished run keeps its list, not its form.
import type { Browser, Page, Request } from 'playwright-core'
import * as v from 'valibot'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import type { RunRecord, RuntimeApiRoute, TaskContext, UpdateRecord } from '../../src/index.ts'
import { type SvcServer, startSvcServer } from '../../src/node.ts'
import { launchChromium, trigger } from './_browser.ts'

const routes: RuntimeApiRoute[] = [
  {
    path: '/api/orders/cart',
    module: {
      route: { kind: 'task', retries: 0 },
      async POST(ctx: TaskContext) {
        const items: string[] = []
        ctx.onUpdate('add-item', {
          input: v.object({ sku: v.pipe(v.string(), v.minLength(1)) }),
          handler: ({ sku }) => {
            if (sku === 'bomb') throw new Error('no bombs in carts')
            items.push(sku)
            return { count: items.length }
          },
        })
        // Answers once the page has stopped waiting for it.
        ctx.onUpdate('slow', { handler: () => new Promise((resolve) => setTimeout(() => resolve('late'), 2500)) })
        await ctx.step.waitForSignal('checkout', 'checkout', { timeoutSeconds: 3600 })
        return { items }
      },
    },
  },
]

let browser: Browser
let server: SvcServer
let page: Page
let pageErrors: string[]
// The sends the page made, by URL (as the page made them, before the route below adds its timeout).
let sends: string[]

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
  page = await browser.newPage({ viewport: { width: 1440, height: 900 } })
  pageErrors = []
  sends = []
  page.on('pageerror', (error) => pageErrors.push(error.message))
  page.on('request', (request: Request) => {
    if (request.method() === 'POST' && /\/updates\//.test(request.url())) sends.push(request.url())
  })
  // The page's sends wait one second for an answer, so that a slow handler is seen pending.
  await page.route(/\/updates\/[^/?]+$/, (route) => route.continue({ url: `${route.request().url()}?timeout=1` }))
})
afterEach(async () => {
  await page.close()
  // An uncaught error in the page fails the test that caused it.
  expect(pageErrors).toEqual([])
})

const panel = () => page.locator('#run')
const form = () => panel().locator('form.update')
const answer = () => panel().locator('.update-answer').textContent()
const problems = () => panel().locator('.update-problems').first().textContent()
const rows = () => panel().locator('table.updates tbody tr')
const count = () => panel().locator('.updates-count').textContent()

const getRun = async (id: string) => (await (await fetch(`${server.url}/__tasks/runs/${id}`)).json()) as RunRecord
const listUpdates = async (id: string) =>
  ((await (await fetch(`${server.url}/__tasks/runs/${id}/updates`)).json()) as { updates: UpdateRecord[] }).updates

/** Starts a run of the cart and opens it once it waits for its checkout. */
async function waitingRun(): Promise<string> {
  const id = await trigger(server.url, 'orders.cart', {})
  await page.goto(`${server.url}/__svc/dashboard#run/${id}`)
  await expect.poll(() => panel().textContent(), { timeout: 15_000 }).toContain('Waiting for signal checkout')
  return id
}

async function sendFromPage(fields: { name: string; data: string; id?: string }): Promise<void> {
  await form().getByLabel('Update name').fill(fields.name)
  await form().getByLabel('Update data (JSON, optional)').fill(fields.data)
  await form()
    .getByLabel('Update id (optional; the same id gets the same answer)')
    .fill(fields.id ?? '')
  await form().getByRole('button', { name: 'Send update' }).click()
}

describe('updates in the run panel', () => {
  it('refuses data that is not JSON; shows the answer, and the list shows it; an id sent again gets the one answer', async () => {
    const id = await waitingRun()
    expect(await count()).toBe('No update sent.')

    await sendFromPage({ name: 'add-item', data: '{ sku: "A-1" }' })
    await expect.poll(problems).toMatch(/^The data is not JSON: /)
    expect(sends).toEqual([])
    expect(await listUpdates(id)).toEqual([])

    await sendFromPage({ name: 'add-item', data: '{"sku":"A-1"}', id: 'add-1' })
    await expect.poll(answer).toBe('Answered add-item (add-1): {"count":1}')
    expect(await problems()).toBe('')
    expect(sends).toEqual([`${server.url}/__tasks/runs/${id}/updates/add-item`])
    await expect.poll(() => rows().count()).toBe(1)
    const cells = await rows().locator('td').allTextContents()
    expect(cells).toEqual([expect.any(String), 'add-item', 'add-1', 'completed', expect.any(String), '{"count":1}'])
    expect(cells[4]).not.toBe('—')
    // What the user typed stays through the refresh the send brought.
    expect(await form().getByLabel('Update name').inputValue()).toBe('add-item')

    await sendFromPage({ name: 'add-item', data: '{"sku":"A-1"}', id: 'add-1' })
    await expect.poll(() => sends.length).toBe(2)
    await expect.poll(answer).toBe('Answered add-item (add-1): {"count":1}')
    expect(await listUpdates(id)).toHaveLength(1)
    expect(await count()).toBe('1 update, 0 pending.')
    // An answer may come before the invocation that gave it has suspended the run again.
    await expect.poll(async () => (await getRun(id)).status).toBe('suspended')
  })

  it("shows the server's code and message for a handler that throws, bad data and a name with no handler; the run waits on", async () => {
    const id = await waitingRun()
    await sendFromPage({ name: 'add-item', data: '{"sku":"bomb"}', id: 'bomb-1' })
    await expect.poll(problems).toMatch(/^UPDATE_FAILED .*no bombs in carts/)
    expect(await answer()).toBe('')
    await expect.poll(() => rows().count()).toBe(1)
    expect(await rows().locator('td.answer').textContent()).toMatch(/^UPDATE_FAILED .*no bombs in carts/)

    // A send's answer is followed by a read of the run and its updates, which redraws the panel: each
    // send waits until the list shows the one before, and the run waits again, so no click lands mid-redraw.
    const settled = async (updates: number) => {
      await expect.poll(() => rows().count()).toBe(updates)
      await expect.poll(async () => (await getRun(id)).status).toBe('suspended')
    }
    await settled(1)
    await sendFromPage({ name: 'add-item', data: '{"sku":""}' })
    await expect.poll(problems).toMatch(/^VALIDATION_FAILED /)

    await settled(2)
    await sendFromPage({ name: 'remove-item', data: '{"sku":"A-1"}' })
    await expect.poll(problems).toMatch(/^UPDATE_NOT_HANDLED /)

    await settled(3)
    await sendFromPage({ name: 'not a name!', data: '' })
    await expect.poll(problems).toMatch(/^INVALID_UPDATE /)
    expect(sends).toHaveLength(4)
    await expect.poll(async () => (await getRun(id)).status).toBe('suspended')
    await expect.poll(() => panel().textContent()).toContain('Waiting for signal checkout')
  })

  it('shows an update the run has not answered in time as pending; the same id then gets its answer', async () => {
    const id = await waitingRun()
    await sendFromPage({ name: 'slow', data: '' })
    await expect.poll(answer, { timeout: 10_000 }).toMatch(/^slow \(.+\) is pending; ask again with the same id\.$/)
    // The id field holds the id the server gave, to ask again with.
    const updateId = await form().getByLabel('Update id (optional; the same id gets the same answer)').inputValue()
    expect(updateId).not.toBe('')
    expect(await answer()).toContain(`(${updateId})`)
    await expect.poll(() => rows().count()).toBe(1)
    expect(await rows().locator('td').nth(3).textContent()).toBe('pending')

    await expect.poll(async () => (await listUpdates(id))[0]?.status, { timeout: 10_000 }).toBe('completed')
    await form().getByRole('button', { name: 'Send update' }).click()
    await expect.poll(answer).toBe(`Answered slow (${updateId}): "late"`)
    await expect.poll(() => rows().locator('td').nth(3).textContent()).toBe('completed')
    expect(await listUpdates(id)).toHaveLength(1)
  })

  it('keeps the list of a finished run, without the form', async () => {
    const id = await waitingRun()
    await sendFromPage({ name: 'add-item', data: '{"sku":"<b>A-1</b>"}', id: 'markup' })
    await expect.poll(answer).toBe('Answered add-item (markup): {"count":1}')
    const res = await fetch(`${server.url}/__tasks/runs/${id}/signals/checkout`, { method: 'POST' })
    expect(res.ok).toBe(true)
    await expect.poll(() => panel().locator('.status').first().textContent()).toBe('completed')
    expect(await getRun(id)).toMatchObject({ status: 'completed', result: { items: ['<b>A-1</b>'] } })
    expect(await form().count()).toBe(0)
    await expect.poll(() => rows().count()).toBe(1)
    expect(await panel().locator('table.updates b').count()).toBe(0)
    expect(await panel().getByRole('heading', { name: 'Updates' }).count()).toBe(1)
  })

  it('keeps the focus and the caret of a field being typed in while the run changes and the panel is drawn again', async () => {
    const id = await waitingRun()
    const data = form().getByLabel('Update data (JSON, optional)')
    await data.click()
    await page.keyboard.type('{"sku":')
    // An update sent from elsewhere changes the run: the panel is drawn again, with the form put back.
    const res = await fetch(`${server.url}/__tasks/runs/${id}/updates/add-item`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"sku":"A-1"}',
    })
    expect(res.status).toBe(200)
    await expect.poll(() => rows().count()).toBe(1)
    await page.keyboard.type('"B-2"}')
    expect(await data.inputValue()).toBe('{"sku":"B-2"}')
  })
})
