/**
 * Takes docs/dashboard.png: serves test/fixtures/dashboard-app, starts a few
 * runs of each kind, opens one that waits on a token in the system's
 * Chromium and captures the page. Run it with `npm run screenshot:dashboard`.
 */
import { fileURLToPath } from 'node:url'
import { chromium } from 'playwright-core'
import { loadApiRoutes, startSvcServer } from '../src/node.ts'

const root = fileURLToPath(new URL('../test/fixtures/dashboard-app', import.meta.url))
const out = fileURLToPath(new URL('../docs/dashboard.png', import.meta.url))

const server = await startSvcServer({
  apiRoutes: await loadApiRoutes({ root }),
  pages: [],
  port: 0,
  host: '127.0.0.1',
  // Development on loopback: the admin surface and the page are open without a secret.
  env: { NODE_ENV: 'development', SVC_DISABLE_IN_PROCESS_CRON: '1' },
  installSignalHandlers: false,
})
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
  args: ['--headless', '--no-sandbox', '--disable-gpu'],
})
try {
  const start = async (task: string, input: unknown) => {
    const res = await fetch(`${server.url}/__tasks/${task}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(input),
    })
    if (!res.ok) throw new Error(`POST /__tasks/${task} answered ${res.status}: ${await res.text()}`)
    return ((await res.json()) as { id: string }).id
  }
  const settled = async (id: string) => {
    for (;;) {
      const run = (await (await fetch(`${server.url}/__tasks/${id}`)).json()) as { status: string }
      if (run.status !== 'running' && run.status !== 'scheduled') return
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
  }
  const failed = await start('jobs.flaky', { order: 7 })
  await settled(failed)
  await fetch(`${server.url}/__tasks/runs/${failed}/replay`, { method: 'POST' })
  for (const name of ['Ada', 'Grace']) await settled(await start('jobs.greet', { name }))
  await settled(await start('jobs.nap', {}))
  const waiting = await start('jobs.approve', { refund: 'R-1042', amount: 129 })
  await settled(waiting)

  const page = await browser.newPage({ viewport: { width: 1440, height: 900 }, colorScheme: 'light' })
  await page.goto(`${server.url}/__svc/dashboard#run/${waiting}`)
  await page.locator('#run .token-id').waitFor()
  await page.locator('#run details.step > summary').first().click()
  await page.locator('#live.on').waitFor()
  await page.screenshot({ path: out, fullPage: true })
  console.log(`Wrote ${out}`)
} finally {
  await browser.close()
  await server.close()
}
