// One task's charts in a real browser, against `svc dev` on test/fixtures/dashboard-timeline:
// the runs per status, the failure rate and the p50 and p95 durations the page shows are those
// the runs API lists, and the page says when a window holds more runs than it reads.
import { fileURLToPath } from 'node:url'
import type { Browser, Page } from 'playwright-core'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import type { RunSummary } from '../../src/runtime/admin/runs-query.ts'
import { eventually } from '../dev/_helpers.ts'
import { type Dev, launchChromium, startDev, trigger } from './_browser.ts'

const FIXTURE = fileURLToPath(new URL('../fixtures/dashboard-timeline', import.meta.url))
const FINISHED = new Set(['completed', 'failed', 'cancelled'])

let dev: Dev
let browser: Browser
let page: Page
let pageErrors: string[]

beforeAll(async () => {
  ;[dev, browser] = await Promise.all([startDev(FIXTURE), launchChromium()])
  // Fifteen runs of different lengths, every third one failing, and one cancelled while it ran.
  for (let i = 0; i < 15; i++) await trigger(dev.url, 'jobs.outcome', { ms: 10 + 20 * i, fail: i % 3 === 0 })
  const cancelled = await trigger(dev.url, 'jobs.outcome', { ms: 5000 })
  await eventually(async () => expect((await runs('jobs.outcome')).find((run) => run.id === cancelled)?.status).toBe('running'))
  expect((await fetch(`${dev.url}/__tasks/runs/${cancelled}/cancel`, { method: 'POST' })).status).toBe(200)
  await allFinished('jobs.outcome')
}, 60_000)
afterAll(async () => {
  await Promise.all([browser?.close(), dev?.stop()])
})
beforeEach(async () => {
  page = await browser.newPage({ viewport: { width: 1440, height: 900 } })
  pageErrors = []
  page.on('pageerror', (error) => pageErrors.push(error.message))
  await page.goto(`${dev.url}/__svc/dashboard`)
})
afterEach(async () => {
  await page.close()
  expect(pageErrors).toEqual([])
})

/** Every run of `task`, newest first, through the cursor of `GET /__tasks/runs`. */
async function runs(task: string): Promise<RunSummary[]> {
  const all: RunSummary[] = []
  let cursor: string | undefined
  do {
    const query = new URLSearchParams({ task, limit: '500' })
    if (cursor) query.set('cursor', cursor)
    const page = (await (await fetch(`${dev.url}/__tasks/runs?${query}`)).json()) as { runs: RunSummary[]; cursor?: string }
    all.push(...page.runs)
    cursor = page.cursor
  } while (cursor)
  return all
}

function allFinished(task: string): Promise<RunSummary[]> {
  return eventually(async () => {
    const listed = await runs(task)
    expect(listed.filter((run) => !FINISHED.has(run.status))).toEqual([])
    return listed
  }, 30_000)
}

/** What the runs API says the charts should show. */
function expected(listed: RunSummary[]) {
  const counts: Record<string, number> = {}
  for (const run of listed) counts[run.status] = (counts[run.status] ?? 0) + 1
  const finished = listed.filter((run) => FINISHED.has(run.status))
  const durations = finished
    .filter((run) => run.startedAt && run.finishedAt)
    .map((run) => Date.parse(run.finishedAt!) - Date.parse(run.startedAt!))
    .sort((a, b) => a - b)
  // Nearest rank: the smallest duration that p% of them do not exceed.
  const rank = (p: number) => durations[Math.ceil((p / 100) * durations.length) - 1]
  return { counts, failed: counts.failed ?? 0, finished: finished.length, p50: rank(50), p95: rank(95) }
}

const charts = () => page.getByRole('region', { name: 'Task charts' })

async function choose(task: string, window: 'hour' | 'day'): Promise<void> {
  await charts().getByLabel('Task').selectOption(task)
  await charts().getByLabel('Window').selectOption(window)
}

/** What the charts show: the legend's counts, the bars' counts summed by status, each bucket, and the figures. */
function shown() {
  return charts().evaluate((section) => {
    const number = (el: Element | null, name: string) => Number(el?.getAttribute(name))
    const legend: Record<string, number> = {}
    for (const li of section.querySelectorAll('.legend li')) legend[li.getAttribute('data-status')!] = number(li, 'data-count')
    const bars: Record<string, number> = {}
    for (const rect of section.querySelectorAll('svg rect[data-status]'))
      bars[rect.getAttribute('data-status')!] = (bars[rect.getAttribute('data-status')!] ?? 0) + number(rect, 'data-count')
    const buckets = [...section.querySelectorAll('svg g[data-bucket]')].map((g) => ({
      start: g.getAttribute('data-bucket')!,
      total: number(g, 'data-total'),
    }))
    const rate = section.querySelector('.fig-rate')
    return {
      runs: number(section.querySelector('.fig-runs'), 'data-count'),
      legend,
      bars,
      buckets,
      failed: number(rate, 'data-failed'),
      finished: number(rate, 'data-finished'),
      rateText: rate?.textContent ?? '',
      p50: number(section.querySelector('.fig-p50'), 'data-ms'),
      p95: number(section.querySelector('.fig-p95'), 'data-ms'),
      capped: section.querySelector('.chart-note')?.hasAttribute('data-capped') ?? false,
      note: section.querySelector('.chart-note')?.textContent ?? '',
    }
  })
}

describe("a task's charts", () => {
  it('count the runs of the last hour by status, in the legend and the stacked bars, as the runs API lists them', async () => {
    await choose('jobs.outcome', 'hour')
    const listed = await runs('jobs.outcome')
    const want = expected(listed)
    expect(want.counts).toEqual({ completed: 10, failed: 5, cancelled: 1 })
    await expect.poll(async () => (await shown()).legend).toEqual(want.counts)
    const seen = await shown()
    expect(seen.runs).toBe(listed.length)
    expect(seen.bars).toEqual(want.counts)
    // Each bucket is a minute and holds the runs created in it.
    for (const bucket of seen.buckets) {
      const start = Date.parse(bucket.start)
      expect(start % 60_000).toBe(0)
      expect(bucket.total).toBe(
        listed.filter((run) => Date.parse(run.createdAt) >= start && Date.parse(run.createdAt) < start + 60_000).length,
      )
    }
    expect(seen.buckets.reduce((sum, bucket) => sum + bucket.total, 0)).toBe(listed.length)
    expect(seen.capped).toBe(false)
  })

  it('show the failure rate of finished runs and the p50 and p95 duration, from finishedAt − startedAt', async () => {
    await choose('jobs.outcome', 'hour')
    const want = expected(await runs('jobs.outcome'))
    await expect.poll(async () => (await shown()).finished).toBe(want.finished)
    const seen = await shown()
    expect([seen.failed, seen.finished]).toEqual([want.failed, want.finished])
    expect(seen.rateText).toContain(`${Number(((want.failed / want.finished) * 100).toFixed(1))}%`)
    expect([seen.p50, seen.p95]).toEqual([want.p50, want.p95])
    // The runs took from 10 to 290 ms, and the cancelled one less than its 5 s.
    expect(want.p50).toBeGreaterThanOrEqual(100)
    expect(want.p95).toBeGreaterThan(want.p50)
  })

  it('count the last day in half-hour buckets', async () => {
    await choose('jobs.outcome', 'day')
    const want = expected(await runs('jobs.outcome'))
    await expect.poll(async () => (await shown()).buckets.every((bucket) => Date.parse(bucket.start) % 1_800_000 === 0)).toBe(true)
    // The buckets and the legend are drawn by one refresh; wait for the one that holds the runs.
    await expect.poll(async () => (await shown()).legend).toEqual(want.counts)
    const seen = await shown()
    expect(seen.bars).toEqual(want.counts)
  })

  it('follow runs that end while the page is open, from the event stream', async () => {
    await choose('jobs.outcome', 'hour')
    await expect.poll(() => page.locator('#live').textContent()).toBe('live')
    await expect.poll(async () => (await shown()).legend.failed).toBe(5)
    await trigger(dev.url, 'jobs.outcome', { ms: 10, fail: true })
    await trigger(dev.url, 'jobs.outcome', { ms: 10 })
    const want = expected(await allFinished('jobs.outcome'))
    await expect.poll(async () => (await shown()).legend, { timeout: 10_000 }).toEqual(want.counts)
    expect((await shown()).p95).toBe(want.p95)
  })
})

describe('a window that holds more runs than the charts read', () => {
  beforeAll(async () => {
    // 5,001 runs of a task that takes no time, started 25 at a time.
    const queue = Array.from({ length: 5001 }, (_, i) => i)
    await Promise.all(
      Array.from({ length: 25 }, async () => {
        while (queue.pop() !== undefined) await trigger(dev.url, 'jobs.many', { count: 0 })
      }),
    )
    await allFinished('jobs.many')
  }, 120_000)

  it('counts the newest 5,000 and says so on the page', async () => {
    await choose('jobs.many', 'hour')
    await expect.poll(async () => (await shown()).capped, { timeout: 15_000 }).toBe(true)
    const seen = await shown()
    expect(seen.runs).toBe(5000)
    expect(seen.legend).toEqual({ completed: 5000 })
    expect(seen.note).toContain('more than 5,000 runs of jobs.many')
    expect((await runs('jobs.many')).length).toBe(5001)
  })
})
