// Finding runs in the dashboard in a real browser, against a development server: the tag,
// metadata and creation filters of the runs list, tags as chips, a run's metadata, and the
// bulk bar that cancels every run the filters find.
import type { Browser, Page } from 'playwright-core'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import type { RunRecord, RuntimeApiRoute, TaskContext } from '../../src/index.ts'
import { type SvcServer, startSvcServer } from '../../src/node.ts'
import { eventually } from '../dev/_helpers.ts'
import { launchChromium, trigger } from './_browser.ts'

// Sets its stage, then waits on a token, so it stays live until cancelled.
const apiRoutes: RuntimeApiRoute[] = [
  {
    path: '/api/jobs/hold',
    module: {
      kind: 'task',
      POST: async (ctx: TaskContext<{ stage: string }>) => {
        await ctx.metadata.set('stage', ctx.input.stage)
        await ctx.step.waitForToken('go', { timeoutSeconds: 3600 })
        return 'released'
      },
    },
  },
]

let browser: Browser
let server: SvcServer
let page: Page
let pageErrors: string[]
const acme: string[] = []
const others: string[] = []

const runs = () => page.getByRole('region', { name: 'Runs' })
const shownIds = () =>
  runs()
    .locator('tbody tr')
    .evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-run')!).sort())
const getRun = async (id: string) => (await (await fetch(`${server.url}/__tasks/${id}`)).json()) as RunRecord

async function hold(stage: string, tags?: string): Promise<string> {
  const id = await trigger(server.url, 'jobs.hold', { stage }, tags ? { 'svc-tags': tags } : {})
  await eventually(async () => expect((await getRun(id)).status).toBe('suspended'))
  return id
}

beforeAll(async () => {
  ;[browser, server] = await Promise.all([
    launchChromium(),
    startSvcServer({ apiRoutes, pages: [], port: 0, host: '127.0.0.1', env: { NODE_ENV: 'development' } }),
  ])
  acme.push(await hold('packing', 'tenant:acme, vip'), await hold('sent', 'tenant:acme'))
  others.push(await hold('packing', 'tenant:globex'), await hold('packing'))
}, 60_000)
afterAll(async () => {
  await Promise.all([browser?.close(), server?.close()])
})
beforeEach(async () => {
  page = await browser.newPage()
  pageErrors = []
  page.on('pageerror', (error) => pageErrors.push(error.message))
  await page.goto(`${server.url}/__svc/dashboard`)
  await expect.poll(async () => (await shownIds()).length).toBe(4)
})
afterEach(async () => {
  await page.close()
  expect(pageErrors).toEqual([])
})

async function filter(label: string, value: string): Promise<void> {
  await runs().getByLabel(label, { exact: true }).fill(value)
  await runs().getByLabel(label, { exact: true }).press('Enter')
}

describe('finding runs in the dashboard', () => {
  it('filters by tags, metadata and creation time, shows tags as chips and a run its metadata', async () => {
    const bar = runs().locator('.bulk')
    expect(await bar.isHidden()).toBe(true)
    await filter('Tags', 'tenant:acme')
    await expect.poll(shownIds).toEqual([...acme].sort())
    expect(await bar.isVisible()).toBe(true)
    const chips = (id: string) => runs().locator(`tr[data-run="${id}"] .tag`).allTextContents()
    expect(await chips(acme[0])).toEqual(['tenant:acme', 'vip'])
    expect(await chips(acme[1])).toEqual(['tenant:acme'])

    // Every tag must be held.
    await filter('Tags', 'tenant:acme, vip')
    await expect.poll(shownIds).toEqual([acme[0]])
    await filter('Tags', '')
    await filter('Metadata', 'stage=sent')
    await expect.poll(shownIds).toEqual([acme[1]])
    await filter('Metadata', 'stage')
    await expect.poll(() => runs().locator('.runs [role=alert]').textContent()).toContain('Write the metadata filter as key=value')
    await filter('Metadata', '')

    // Created from a minute ahead: none yet.
    const ahead = new Date(Date.now() + 60_000 - new Date().getTimezoneOffset() * 60_000).toISOString().slice(0, 16)
    await filter('Created from', ahead)
    await expect.poll(() => runs().locator('.runs').textContent()).toBe('No runs match.')
    await filter('Created from', '')
    await filter('Created to', ahead)
    await expect.poll(async () => (await shownIds()).length).toBe(4)
    await filter('Created to', '')
    await expect.poll(() => bar.isHidden()).toBe(true)

    // A refused bulk call says why, and acts on nothing.
    const completed = runs().getByRole('group', { name: 'Status' }).getByLabel('completed')
    await completed.check()
    await runs().getByRole('button', { name: 'Cancel matching' }).click()
    await expect.poll(() => bar.getByRole('alert').textContent()).toContain('a cancel acts on live runs')
    await completed.uncheck()
    await expect.poll(() => bar.isHidden()).toBe(true)

    await runs().locator(`tr[data-run="${acme[0]}"] a`).click()
    const panel = page.locator('#run')
    await expect.poll(() => panel.locator('dd .tag').allTextContents()).toEqual(['tenant:acme', 'vip'])
    await expect.poll(() => panel.locator('.metadata').textContent()).toContain('stage: "packing"')
  })

  it('cancels exactly the runs the filters find, after confirming their count', async () => {
    await filter('Tags', 'tenant:acme')
    await expect.poll(shownIds).toEqual([...acme].sort())
    const asked: string[] = []
    page.on('dialog', (dialog) => {
      asked.push(dialog.message())
      void dialog.accept()
    })
    await runs().getByRole('button', { name: 'Cancel matching' }).click()
    await expect.poll(() => runs().getByRole('status').textContent()).toBe('Cancelled 2 runs; 0 skipped, 0 failed.')
    expect(asked).toEqual(['Cancel 2 runs?'])
    for (const id of acme) expect((await getRun(id)).status).toBe('cancelled')
    for (const id of others) expect((await getRun(id)).status).toBe('suspended')
    await expect.poll(() => runs().locator('tbody .status').allTextContents()).toEqual(['cancelled', 'cancelled'])

    // Nothing live is left to cancel: the bar says so and asks nothing.
    await runs().getByRole('button', { name: 'Cancel matching' }).click()
    await expect.poll(() => runs().getByRole('status').textContent()).toBe('No runs match the filters: nothing to cancel.')
    expect(asked).toHaveLength(1)

    // Replayed, the cancelled runs start again, with their tags.
    await runs().getByRole('button', { name: 'Replay matching' }).click()
    await expect.poll(() => runs().getByRole('status').textContent()).toBe('Replayed 2 runs; 0 skipped, 0 failed.')
    expect(asked).toEqual(['Cancel 2 runs?', 'Replay 2 runs?'])
    await expect.poll(async () => (await shownIds()).length).toBe(4)
    for (const id of others) expect((await getRun(id)).status).toBe('suspended')
  })
})
