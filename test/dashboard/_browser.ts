/** Helpers of the dashboard's browser suites: Debian's Chromium driven by playwright-core, and `svc dev` on the fixture app. */
import { type ChildProcess, spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { type Browser, chromium, type Page } from 'playwright-core'
import { afterAll, afterEach, beforeAll, beforeEach, expect } from 'vitest'
import { eventually } from '../dev/_helpers.ts'

export const FIXTURE = fileURLToPath(new URL('../fixtures/dashboard-app', import.meta.url))
const cli = fileURLToPath(new URL('../../src/cli/main.ts', import.meta.url))

/** The system's Chromium (`apt-get install chromium`); no browser is ever downloaded. `args` are added to its command line. */
export function launchChromium(args: string[] = []): Promise<Browser> {
  return chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', ...args],
  })
}

export interface Dev {
  url: string
  stop(): Promise<void>
}

/** `svc dev` on the fixture app, keeping runs in memory so the fixture folder stays clean. */
export async function startDev(root = FIXTURE): Promise<Dev> {
  const env = { ...process.env, NODE_ENV: 'development', NO_COLOR: '1', SVC_STORE_URL: 'memory' }
  delete (env as Record<string, string | undefined>).SVC_TASK_SECRET
  delete (env as Record<string, string | undefined>).THEN_TASK_SECRET
  const child: ChildProcess = spawn(process.execPath, [cli, 'dev', '--root', root, '--port', '0', '--host', '127.0.0.1'], { env })
  let out = ''
  child.stdout!.on('data', (chunk) => (out += chunk))
  child.stderr!.on('data', (chunk) => (out += chunk))
  const exited = new Promise((resolve) => child.once('exit', resolve))
  await eventually(async () => expect(out).toMatch(/Dashboard: /), 20_000)
  const url = out.match(/svc dev: (\S+)/)![1]
  // svc dev prints where the page is.
  expect(out).toContain(`Dashboard: ${url}/__svc/dashboard`)
  return {
    url,
    async stop() {
      child.kill('SIGINT')
      await exited
    },
  }
}

/** Starts a run over the admin surface, as code outside the page would. */
export async function trigger(url: string, task: string, input: unknown, headers: Record<string, string> = {}): Promise<string> {
  const res = await fetch(`${url}/__tasks/${task}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(input),
  })
  expect(res.status).toBe(202)
  return ((await res.json()) as { id: string }).id
}

/** What `dashboardPerTest` gives a suite: `svc dev` and Chromium for the file, a fresh dashboard page for each test. */
export interface DashboardUnderTest {
  readonly dev: Dev
  readonly page: Page
}

/**
 * Starts `svc dev` on the fixture and Chromium once for the file, opens the
 * dashboard in a new page before each test, and fails a test whose page
 * threw an uncaught error. `onPage` runs once the page has loaded.
 */
export function dashboardPerTest(onPage?: (page: Page) => Promise<void>): DashboardUnderTest {
  let dev: Dev
  let browser: Browser
  let page: Page
  let pageErrors: string[] = []
  beforeAll(async () => {
    ;[dev, browser] = await Promise.all([startDev(), launchChromium()])
  }, 60_000)
  afterAll(async () => {
    await Promise.all([browser?.close(), dev?.stop()])
  })
  beforeEach(async () => {
    page = await browser.newPage()
    pageErrors = []
    page.on('pageerror', (error) => pageErrors.push(error.message))
    await page.goto(`${dev.url}/__svc/dashboard`)
    await onPage?.(page)
  })
  afterEach(async () => {
    await page.close()
    // An uncaught error in the page fails the test that caused it.
    expect(pageErrors).toEqual([])
  })
  return {
    get dev() {
      return dev
    },
    get page() {
      return page
    },
  }
}
