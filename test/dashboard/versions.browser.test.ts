// The versions of runs in a real browser, against a development server whose tasks record
// versions: the version column and filter of the runs list, and a run's version and moves.
import type { Browser, Page } from 'playwright-core'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { MemoryRunStore, type RunRecord, type RuntimeApiRoute } from '../../src/index.ts'
import { type SvcServer, startSvcServer } from '../../src/node.ts'
import { launchChromium, trigger } from './_browser.ts'

const LONG = 'release-2025-06-01-4f3c2a1b'

const apiRoutes: RuntimeApiRoute[] = [
  { path: '/api/jobs/old', version: 'v1', module: { kind: 'task', POST: async () => 'old' } },
  { path: '/api/jobs/new', version: LONG, module: { kind: 'task', POST: async () => 'new' } },
  { path: '/api/jobs/plain', module: { kind: 'task', POST: async () => 'plain' } },
]

let browser: Browser
let server: SvcServer
let store: MemoryRunStore
let page: Page
let pageErrors: string[]
const ids: Record<'old' | 'fresh' | 'plain', string> = { old: '', fresh: '', plain: '' }

/** A finished run that moved twice, as a process of another version records it. */
const moved: RunRecord = {
  id: '00000000-0000-7000-8000-00000000000a',
  taskName: 'jobs.old',
  status: 'completed',
  trigger: 'manual',
  input: null,
  ok: true,
  attempts: [],
  steps: {},
  createdAt: '2025-01-01T00:00:00.000Z',
  version: 'v3',
  migrations: [
    { from: 'v1', to: 'v2', at: '2025-01-01T00:00:01.000Z' },
    { from: 'v2', to: 'v3', at: '2025-01-01T00:00:02.000Z' },
  ],
}

beforeAll(async () => {
  store = new MemoryRunStore()
  ;[browser, server] = await Promise.all([
    launchChromium(),
    startSvcServer({ apiRoutes, pages: [], port: 0, host: '127.0.0.1', env: { NODE_ENV: 'development' }, store }),
  ])
  await store.createRun(moved)
  ids.old = await trigger(server.url, 'jobs.old', {})
  ids.fresh = await trigger(server.url, 'jobs.new', {})
  ids.plain = await trigger(server.url, 'jobs.plain', {})
  await Promise.all(Object.values(ids).map((id) => server.runtime.waitForRun(id)))
}, 60_000)
afterAll(async () => {
  await Promise.all([browser?.close(), server?.close()])
})
beforeEach(async () => {
  page = await browser.newPage()
  pageErrors = []
  page.on('pageerror', (error) => pageErrors.push(error.message))
})
afterEach(async () => {
  await page.close()
  expect(pageErrors).toEqual([])
})

const runs = () => page.getByRole('region', { name: 'Runs' })

/** Each listed run's version cell, by run id. */
async function versions(): Promise<Record<string, string>> {
  const rows = await runs()
    .locator('tbody tr')
    .evaluateAll((trs) => trs.map((tr) => [tr.getAttribute('data-run')!, tr.children[2].textContent!] as const))
  return Object.fromEntries(rows)
}

describe('versions in the runs dashboard', () => {
  it('lists each run with its version, a long one cut with the whole in its tooltip, and — for none', async () => {
    await page.goto(`${server.url}/__svc/dashboard`)
    await expect.poll(versions).toEqual({ [ids.old]: 'v1', [ids.fresh]: LONG, [ids.plain]: '—', [moved.id]: 'v3' })
    expect(await runs().locator('thead th').allTextContents()).toEqual([
      'Run',
      'Task',
      'Version',
      'Status',
      'Trigger',
      'Created',
      'Attempts',
    ])
    const long = runs().locator(`tr[data-run="${ids.fresh}"] code.version`)
    expect(await long.getAttribute('title')).toBe(LONG)
    const { shown, whole } = await long.evaluate((el) => ({ shown: el.clientWidth, whole: el.scrollWidth }))
    expect(shown).toBeLessThan(whole)
  })

  it('filters the runs by version, with the other filters, and says why a version is refused', async () => {
    await page.goto(`${server.url}/__svc/dashboard`)
    await expect.poll(async () => Object.keys(await versions()).length).toBe(4)
    const filter = runs().getByLabel('Version')
    await filter.fill('v1')
    await filter.press('Enter')
    await expect.poll(versions).toEqual({ [ids.old]: 'v1' })
    await filter.fill(LONG)
    await filter.press('Enter')
    await expect.poll(versions).toEqual({ [ids.fresh]: LONG })
    await runs().getByLabel('Task').selectOption('jobs.old')
    await expect.poll(() => runs().locator('.runs').textContent()).toBe('No runs match.')
    await runs().getByLabel('Task').selectOption('')
    await filter.fill('v 1')
    await filter.press('Enter')
    await expect
      .poll(() => runs().getByRole('alert').textContent())
      .toContain('version must be 1 to 128 printable ASCII characters without spaces (got "v 1")')
    await filter.fill('')
    await filter.press('Enter')
    await expect.poll(async () => Object.keys(await versions()).length).toBe(4)
  })

  it("shows a run's version and each move of it to another version", async () => {
    await page.goto(`${server.url}/__svc/dashboard#run/${moved.id}`)
    const facts = page.locator('#run dl.facts')
    await facts.waitFor()
    const pairs = await facts.locator('dt').evaluateAll((dts) => dts.map((dt) => [dt.textContent, dt.nextElementSibling!.textContent]))
    const byName = Object.fromEntries(pairs)
    expect(byName.Version).toBe('v3')
    const moves = await facts.locator('ul.moves li').allInnerTexts()
    expect(moves).toHaveLength(2)
    expect(moves[0]).toMatch(/^from v1 to v2 at .+/)
    expect(moves[1]).toMatch(/^from v2 to v3 at .+/)
    expect(await facts.locator('ul.moves time').evaluateAll((times) => times.map((t) => t.getAttribute('datetime')))).toEqual(
      moved.migrations!.map((move) => move.at),
    )

    await page.goto(`${server.url}/__svc/dashboard#run/${ids.plain}`)
    await page.locator('#run .run-id').filter({ hasText: ids.plain }).waitFor()
    expect(await facts.locator('dt').allTextContents()).not.toContain('Version')
    expect(await facts.locator('ul.moves').count()).toBe(0)
  })
})
