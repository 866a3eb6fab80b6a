// A run's timeline in a real browser, against `svc dev` on test/fixtures/dashboard-timeline:
// bars as wide as the durations the record holds, waits and logs on the same axis, and a run
// of 5,000 steps drawn whole.
import { fileURLToPath } from 'node:url'
import { gzipSync } from 'node:zlib'
import type { Browser, Page } from 'playwright-core'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { DASHBOARD_HTML } from '../../src/runtime/dashboard/page.generated.ts'
import type { RunRecord } from '../../src/runtime/types.ts'
import { eventually } from '../dev/_helpers.ts'
import { type Dev, launchChromium, startDev, trigger } from './_browser.ts'

const FIXTURE = fileURLToPath(new URL('../fixtures/dashboard-timeline', import.meta.url))

let dev: Dev
let browser: Browser
let page: Page
let pageErrors: string[]

beforeAll(async () => {
  ;[dev, browser] = await Promise.all([startDev(FIXTURE), launchChromium()])
}, 60_000)
afterAll(async () => {
  await Promise.all([browser?.close(), dev?.stop()])
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

const record = async (id: string) => (await (await fetch(`${dev.url}/__tasks/runs/${id}`)).json()) as RunRecord

/** The record of run `id` once it is in `status`. */
function settled(id: string, status: string): Promise<RunRecord> {
  return eventually(async () => {
    const run = await record(id)
    expect(run.status).toBe(status)
    return run
  }, 15_000)
}

const timeline = () => page.locator('#run .tl')

/** Opens run `id` and waits for its timeline's first bar. */
async function open(id: string): Promise<void> {
  await page.goto(`${dev.url}/__svc/dashboard#run/${id}`)
  await timeline().locator('rect.tl-bar').first().waitFor()
}

/** Each bar's data and where it is drawn, top to bottom. */
function bars(row: string) {
  return timeline()
    .locator(`rect.tl-bar[data-row="${row}"]`)
    .evaluateAll((rects) =>
      rects.map((rect) => {
        const box = rect.getBoundingClientRect()
        return {
          key: rect.getAttribute('data-key')!,
          class: rect.getAttribute('class')!,
          startMs: Number(rect.getAttribute('data-start-ms')),
          durationMs: Number(rect.getAttribute('data-duration-ms')),
          x: box.x,
          width: box.width,
          title: rect.querySelector('title')?.textContent ?? null,
        }
      }),
    )
}

/** Where the time axis is drawn: its left end is the run's creation, its right end the span's. */
async function axis(): Promise<{ x: number; width: number; spanMs: number }> {
  const line = timeline().locator('.tl-axis')
  const box = (await line.boundingBox())!
  const spanMs = Number(await timeline().locator('svg.tl-head').getAttribute('data-span-ms'))
  return { x: box.x, width: box.width, spanMs }
}

/** The run's span as the timeline draws it: its creation to its end, or to anything recorded later. */
function span(run: RunRecord): number {
  const t0 = Date.parse(run.createdAt)
  const ends = [
    Date.parse(run.finishedAt!),
    ...run.attempts.map((a) => Date.parse(a.startedAt) + a.durationMs),
    ...Object.values(run.steps).map((s) => Date.parse(s.startedAt!) + s.durationMs!),
  ]
  return Math.max(...ends) - t0
}

describe('the timeline of a run of three timed steps, a sleep and three log entries', () => {
  let run: RunRecord
  beforeAll(async () => {
    run = await settled(await trigger(dev.url, 'jobs.timed', { napSeconds: 1 }), 'completed')
  }, 30_000)
  beforeEach(() => open(run.id))

  it('draws a bar per step in the order they began, each as wide on the axis as its duration is long in the run', async () => {
    const drawn = await bars('step')
    const t0 = Date.parse(run.createdAt)
    const steps = Object.entries(run.steps).sort(([, a], [, b]) => Date.parse(a.startedAt!) - Date.parse(b.startedAt!))
    expect(drawn.map((bar) => bar.key)).toEqual(['short', 'medium', 'long', 'nap'])
    expect(drawn.map((bar) => [bar.key, bar.startMs, bar.durationMs])).toEqual(
      steps.map(([key, step]) => [key, Date.parse(step.startedAt!) - t0, step.durationMs]),
    )
    const { x, width, spanMs } = await axis()
    expect(spanMs).toBe(span(run))
    for (const bar of drawn) {
      expect(Math.abs(bar.width - Math.max((bar.durationMs / spanMs) * width, 1))).toBeLessThanOrEqual(1.5)
      expect(Math.abs(bar.x - x - (bar.startMs / spanMs) * width)).toBeLessThanOrEqual(1.5)
    }
    // The steps took 50, 150 and 300 ms and the nap a second: the bars say
    // so, within the millisecond a timer may fire early by on Date's clock.
    expect(drawn[0].durationMs).toBeGreaterThanOrEqual(49)
    expect(drawn[1].durationMs).toBeGreaterThanOrEqual(149)
    expect(drawn[2].durationMs).toBeGreaterThanOrEqual(299)
    expect(drawn[3].durationMs).toBeGreaterThanOrEqual(900)
    const widths = drawn.map((bar) => bar.width)
    expect([...widths].sort((a, b) => a - b)).toEqual(widths)
  })

  it('draws the wait to start, each attempt, and the met sleep as a wait labelled with what it waited on', async () => {
    const [queue] = await bars('queue')
    expect(queue.startMs).toBe(0)
    expect(queue.durationMs).toBe(Date.parse(run.startedAt!) - Date.parse(run.createdAt))
    expect((await bars('attempt')).map((bar) => bar.durationMs)).toEqual(run.attempts.map((a) => a.durationMs))
    const nap = (await bars('step')).find((bar) => bar.key === 'nap')!
    expect(nap.class).toContain('k-wait')
    expect(await timeline().locator('.tl-labels > div').allTextContents()).toContain('nap · sleep')
    // A step's tooltip is made when the pointer first reaches its bar.
    await timeline().locator('rect[data-key="nap"]').hover()
    expect(await timeline().locator('rect[data-key="nap"] title').textContent()).toMatch(/^nap \(sleep\): \d+(\.\d)? (ms|s)$/)
  })

  it('marks each kept log entry on the axis, coloured by level, and lists them under the timeline', async () => {
    const marks = timeline().locator('circle.log')
    expect(await marks.count()).toBe(run.logs!.kept.length)
    const t0 = Date.parse(run.createdAt)
    expect(
      await marks.evaluateAll((circles) =>
        circles.map((c) => [c.getAttribute('data-level'), Number(c.getAttribute('data-at-ms')), c.querySelector('title')!.textContent]),
      ),
    ).toEqual(run.logs!.kept.map((entry) => [entry.level, Date.parse(entry.at) - t0, expect.stringContaining(entry.message)]))
    expect(run.logs!.kept.map((entry) => entry.level)).toEqual(['info', 'warn', 'error'])
    const rows = page.locator('#run table.logs tbody tr')
    expect(await rows.count()).toBe(3)
    expect(await rows.nth(1).textContent()).toContain('medium')
    expect(await rows.nth(1).textContent()).toContain('halfway')
    expect(await rows.nth(2).textContent()).toContain('{"late":false}')
  })

  it('lists the steps of a record written before timings were kept, without bars', async () => {
    // The page reads the record as such a store would return it: steps without startedAt and durationMs.
    await page.route(`**/__tasks/${run.id}`, async (route) => {
      const old = (await (await route.fetch()).json()) as RunRecord
      for (const step of Object.values(old.steps)) {
        delete step.startedAt
        delete step.durationMs
      }
      await route.fulfill({ json: old })
    })
    await page.reload()
    await timeline().locator('rect.tl-bar').first().waitFor()
    const untimed = timeline().locator('.tl-labels > .untimed')
    expect(await untimed.evaluateAll((rows) => rows.map((row) => row.getAttribute('data-key')))).toEqual(['short', 'medium', 'long', 'nap'])
    expect(await timeline().locator('rect[data-row="step"]').count()).toBe(0)
    expect(await timeline().locator('rect[data-row="queue"]').count()).toBe(1)
  })
})

describe("a run's timeline", () => {
  it('draws what a suspended run waits on from when it suspended, labelled', async () => {
    const id = await trigger(dev.url, 'jobs.timed', { napSeconds: 3600 })
    const run = await settled(id, 'suspended')
    await open(id)
    const [wait] = await bars('suspended')
    expect(wait.key).toBe('nap')
    expect(wait.startMs).toBe(Date.parse(run.suspended!.since!) - Date.parse(run.createdAt))
    expect(wait.class).toContain('k-live')
    const labels = await timeline().locator('.tl-labels > div').allTextContents()
    expect(labels.at(-1)).toMatch(/^nap · sleep until /)
    // It lasts until now: the axis ends where it does.
    const { x, width } = await axis()
    expect(Math.abs(wait.x + wait.width - (x + width))).toBeLessThanOrEqual(1.5)
  })

  it("marks a failed attempt with its error as the bar's tooltip", async () => {
    const id = await trigger(dev.url, 'jobs.outcome', { ms: 20, fail: true })
    await settled(id, 'failed')
    await open(id)
    const [attempt] = await bars('attempt')
    expect(attempt.class).toContain('k-failed')
    expect(attempt.title).toContain('asked to fail')
  })

  it('draws a run of 5,000 steps whole, one bar each, in a box that scrolls', async () => {
    const id = await trigger(dev.url, 'jobs.many', { count: 5000 })
    const run = await settled(id, 'completed')
    // When the timeline's rows first hold a bar per step, timed in the page.
    await page.addInitScript(() => {
      const seen = new MutationObserver(() => {
        if (document.querySelectorAll('.tl-rows rect[data-row="step"]').length < 5000) return
        ;(window as { drawnAt?: number }).drawnAt = performance.now()
        seen.disconnect()
      })
      seen.observe(document, { childList: true, subtree: true })
    })
    await open(id)
    await expect.poll(() => page.evaluate(() => (window as { drawnAt?: number }).drawnAt), { timeout: 30_000 }).toBeGreaterThan(0)
    expect(await timeline().locator('rect[data-row="step"]').count()).toBe(5000)
    expect(Object.keys(run.steps)).toHaveLength(5000)
    const body = timeline().locator('.tl-body')
    expect(await body.evaluate((el) => el.scrollHeight > el.clientHeight)).toBe(true)

    const measured = await page.evaluate((runId) => {
      const entry = performance.getEntriesByType('resource').find((e) => e.name.endsWith(runId)) as PerformanceResourceTiming
      return {
        drawnAt: (window as { drawnAt?: number }).drawnAt!,
        recordAt: entry.responseEnd,
        recordBytes: entry.encodedBodySize,
        markup: document.querySelector('#run .tl')!.innerHTML.length,
        elements: document.getElementsByTagName('*').length,
      }
    }, id)
    const kb = (bytes: number) => `${(bytes / 1024).toFixed(0)} KB`
    console.log(
      `5,000-step run: timeline drawn ${Math.round(measured.drawnAt - measured.recordAt)} ms after its record arrived ` +
        `(${Math.round(measured.drawnAt)} ms after navigation); record ${kb(measured.recordBytes)}, timeline markup ${kb(measured.markup)}, ` +
        `${measured.elements} elements in the page; dashboard page ${kb(DASHBOARD_HTML.length)} (${kb(gzipSync(DASHBOARD_HTML).length)} gzipped)`,
    )

    // The list below shows the first steps until asked for all.
    expect(await page.locator('#run details.step').count()).toBe(100)
    await page.getByRole('button', { name: 'Show all 5000 steps' }).click()
    await expect.poll(() => page.locator('#run details.step').count()).toBe(5000)
  }, 60_000)
})
