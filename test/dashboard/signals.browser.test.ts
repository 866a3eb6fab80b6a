// A run's signals in the dashboard, in a real browser against a real server: a run waiting on a
// signal says so and the form is filled in with its name; data that is not JSON is refused
// before anything is sent; a send resumes the run and the Signals list shows the step that
// took it; a signal no wait took is listed as waiting, and a repeated id is kept once.
import type { Browser, Page, Request } from 'playwright-core'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import type { RunRecord, RuntimeApiRoute, SignalRecord, TaskContext } from '../../src/index.ts'
import { type SvcServer, startSvcServer } from '../../src/node.ts'
import { launchChromium, trigger } from './_browser.ts'

const routes: RuntimeApiRoute[] = [
  {
    path: '/api/orders/refund',
    module: {
      route: { kind: 'task', retries: 0 },
      async POST(ctx: TaskContext) {
        const approval = await ctx.step.waitForSignal<{ ok: boolean }>('approval', 'approval', { timeoutSeconds: 3600 })
        return 'timedOut' in approval ? { timedOut: true } : { approved: approval.data }
      },
    },
  },
]

let browser: Browser
let server: SvcServer
let page: Page
let pageErrors: string[]
// The sends the page made, by URL.
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
    if (request.method() === 'POST' && /\/signals\//.test(request.url())) sends.push(request.url())
  })
})
afterEach(async () => {
  await page.close()
  // An uncaught error in the page fails the test that caused it.
  expect(pageErrors).toEqual([])
})

const panel = () => page.locator('#run')
const form = () => panel().locator('form.signal')
const answer = () => panel().locator('.signal-answer').textContent()
const problems = () => panel().locator('.signal-problems').first().textContent()
const rows = () => panel().locator('table.signals tbody tr')

const getRun = async (id: string) => (await (await fetch(`${server.url}/__tasks/runs/${id}`)).json()) as RunRecord
const listSignals = async (id: string) =>
  ((await (await fetch(`${server.url}/__tasks/runs/${id}/signals`)).json()) as { signals: SignalRecord[] }).signals

/** Starts a run of the task and opens it once it waits for its signal. */
async function waitingRun(): Promise<string> {
  const id = await trigger(server.url, 'orders.refund', {})
  await page.goto(`${server.url}/__svc/dashboard#run/${id}`)
  await expect.poll(() => panel().textContent(), { timeout: 15_000 }).toContain('Waiting for signal approval')
  return id
}

async function sendFromPage(fields: { name?: string; data: string; id?: string }): Promise<void> {
  if (fields.name !== undefined) await form().getByLabel('Signal name').fill(fields.name)
  await form().getByLabel('Signal data (JSON, optional)').fill(fields.data)
  await form()
    .getByLabel('Signal id (optional; the same id is kept once)')
    .fill(fields.id ?? '')
  await form().getByRole('button', { name: 'Send signal' }).click()
}

describe('signals in the run panel', () => {
  it('fills the form in with the awaited name; data that is not JSON sends nothing; a send resumes the run and the list shows the step that took it', async () => {
    const id = await waitingRun()
    expect(await form().getByLabel('Signal name').inputValue()).toBe('approval')
    expect(await panel().locator('.signals-count').textContent()).toBe('No signal sent.')

    await sendFromPage({ data: '{ ok: true }' })
    await expect.poll(problems).toMatch(/^The data is not JSON: /)
    expect(sends).toEqual([])
    expect(await listSignals(id)).toEqual([])
    expect((await getRun(id)).status).toBe('suspended')

    await sendFromPage({ data: '{"ok":true}', id: 'approve-1' })
    await expect.poll(() => panel().locator('.status').first().textContent()).toBe('completed')
    expect(sends).toEqual([`${server.url}/__tasks/runs/${id}/signals/approval`])
    expect(await getRun(id)).toMatchObject({ status: 'completed', result: { approved: { ok: true } } })
    // The answer outlives the form, which goes with the run's end.
    expect(await answer()).toBe('Sent approval as approve-1.')
    expect(await problems()).toBe('')
    expect(await form().count()).toBe(0)
    await expect.poll(() => rows().count()).toBe(1)
    expect(await rows().locator('td').allTextContents()).toEqual([
      expect.any(String),
      'approval',
      'approve-1',
      '{"ok":true}',
      'step approval',
    ])
    expect(await panel().locator('.signals-count').textContent()).toBe('1 signal, 0 waiting to be read.')
  })

  it('lists a signal no wait took as waiting to be read, keeps a repeated id once, and shows its data as text', async () => {
    const id = await waitingRun()
    const data = JSON.stringify('<b>not markup</b>')
    await sendFromPage({ name: 'note', data, id: 'note-1' })
    await expect.poll(answer).toBe('Sent note as note-1.')
    await expect.poll(() => rows().count()).toBe(1)
    // What the user typed stays through the refresh the send brought.
    expect(await form().getByLabel('Signal name').inputValue()).toBe('note')
    expect(await rows().locator('td.taken-by').textContent()).toBe('waiting to be read')
    expect(await rows().locator('td.data').textContent()).toBe(data)
    expect(await panel().locator('table.signals b').count()).toBe(0)

    await sendFromPage({ name: 'note', data, id: 'note-1' })
    await expect.poll(answer).toBe('Already sent: the run keeps it once (note-1).')
    expect(sends).toHaveLength(2)
    expect(await listSignals(id)).toHaveLength(1)
    expect(await rows().count()).toBe(1)
    expect(await panel().locator('.signals-count').textContent()).toBe('1 signal, 1 waiting to be read.')
    // The run still waits for its approval.
    expect((await getRun(id)).status).toBe('suspended')
    expect(await panel().textContent()).toContain('Waiting for signal approval')
  })

  it("shows the server's refusal of a bad name", async () => {
    await waitingRun()
    await sendFromPage({ name: 'not a name!', data: '' })
    await expect.poll(problems).toMatch(/^INVALID_SIGNAL /)
    expect(await answer()).toBe('')
  })
})
