// A run's compensation in the dashboard, in a real browser against a real server: a run that
// failed for good and undid its steps says so, with its error and the undo steps in its steps;
// one whose undo kept failing is `compensation_failed` and names that step and its error; a
// waiting run cancelled with "Cancel and undo" undoes its steps and ends cancelled.
import type { Browser, Page } from 'playwright-core'
import { afterAll, afterEach, beforeAll, beforeEach, expect, it } from 'vitest'
import type { RunRecord, RuntimeApiRoute, TaskContext } from '../../src/index.ts'
import { type SvcServer, startSvcServer } from '../../src/node.ts'
import { launchChromium, trigger } from './_browser.ts'

const routes: RuntimeApiRoute[] = [
  {
    path: '/api/trips/book',
    module: {
      route: { kind: 'task', retries: 0 },
      async POST(ctx: TaskContext<{ stuck?: boolean; wait?: boolean }>) {
        await ctx.step.run('flight', () => 'F1', {
          compensate: () => {
            if (ctx.input.stuck) throw new Error('the airline is down')
          },
        })
        if (ctx.input.wait) await ctx.step.sleep('pause', 3600)
        await ctx.step.run('car', () => {
          throw new Error('no cars left')
        })
      },
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
  page = await browser.newPage({ viewport: { width: 1440, height: 900 } })
  pageErrors = []
  page.on('pageerror', (error) => pageErrors.push(error.message))
})
afterEach(async () => {
  await page.close()
  expect(pageErrors).toEqual([])
})

const panel = () => page.locator('#run')
const finished = async (id: string, status: string) =>
  expect
    .poll(async () => ((await (await fetch(`${server.url}/__tasks/runs/${id}`)).json()) as RunRecord).status, { timeout: 15_000 })
    .toBe(status)

it('shows a run that undid its steps after it failed, and one whose undo kept failing', async () => {
  const undone = await trigger(server.url, 'trips.book', {})
  await finished(undone, 'failed')
  await page.goto(`${server.url}/__svc/dashboard#run/${undone}`)
  await expect.poll(() => panel().textContent(), { timeout: 15_000 }).toContain('Every completed step was undone after it failed')
  await expect.poll(() => panel().locator('pre.error').first().textContent()).toBe('no cars left')
  await expect.poll(() => panel().textContent()).toContain('compensate:flight')

  const stuck = await trigger(server.url, 'trips.book', { stuck: true })
  await finished(stuck, 'compensation_failed')
  await page.goto(`${server.url}/__svc/dashboard#run/${stuck}`)
  await expect
    .poll(() => panel().locator('.compensation').textContent(), { timeout: 15_000 })
    .toContain('The undo of step flight kept failing')
  await expect.poll(() => panel().textContent()).toContain('the airline is down')
  await expect.poll(() => panel().locator('.status').first().textContent()).toBe('compensation_failed')
}, 60_000)

it('cancels a waiting run with its undos first from "Cancel and undo", and says it was undone after it was cancelled', async () => {
  const waiting = await trigger(server.url, 'trips.book', { wait: true })
  await finished(waiting, 'suspended')
  await page.goto(`${server.url}/__svc/dashboard#run/${waiting}`)
  const undo = panel().getByRole('button', { name: 'Cancel and undo' })
  await undo.click()
  await finished(waiting, 'cancelled')
  await expect.poll(() => panel().textContent(), { timeout: 15_000 }).toContain('Every completed step was undone after it was cancelled')
  await expect.poll(() => panel().textContent()).toContain('compensate:flight')
  await expect.poll(() => panel().getByRole('button', { name: 'Cancel and undo' }).count()).toBe(0)
}, 60_000)
