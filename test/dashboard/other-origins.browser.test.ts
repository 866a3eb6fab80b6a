// Pages of other origins in the developer's own browser, against `svc dev` without a task secret:
// a page on another loopback port, a page of another site, and a DNS-rebound name. None of them
// may start a run or read the admin surface; the dashboard keeps working from its own origin
// (dev.browser.test.ts).
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Browser } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type Dev, launchChromium, startDev } from './_browser.ts'

let dev: Dev
let browser: Browser
let other: Server
let otherPort: number
// Chromium resolves these names to this machine, as a DNS rebinding attack or a site's name would.
const REBOUND = 'rebind.attacker.test'
const OTHER_SITE = 'evil.attacker.test'

/** The attacking pages: each posts `{"name":"mallory"}` to the svc it is given in `?svc=`. */
const PAGES: Record<string, string> = {
  '/fetch': `<!doctype html><title>fetch</title><script>
    const svc = new URLSearchParams(location.search).get('svc')
    fetch(svc + '/__tasks/jobs.greet', { method: 'POST', mode: 'no-cors', body: JSON.stringify({ name: 'mallory' }) })
      .then(() => (document.title = 'sent'), () => (document.title = 'sent'))
  </script>`,
  // enctype=text/plain sends "<name>=<value>\\r\\n": this name and value make that a JSON object.
  '/form': `<!doctype html><title>form</title><form method="post" enctype="text/plain">
    <input type="hidden" name='{"name":"mallory","pad":"' value='"}'></form><script>
    const form = document.forms[0]
    form.action = new URLSearchParams(location.search).get('svc') + '/__tasks/jobs.greet'
    form.submit()
  </script>`,
}

beforeAll(async () => {
  other = createServer((req, res) => {
    const page = PAGES[new URL(req.url!, 'http://x').pathname]
    res.writeHead(page ? 200 : 404, { 'content-type': 'text/html; charset=utf-8' }).end(page ?? '')
  })
  await new Promise<void>((resolve) => other.listen(0, '127.0.0.1', resolve))
  otherPort = (other.address() as AddressInfo).port
  ;[dev, browser] = await Promise.all([
    startDev(),
    launchChromium([`--host-resolver-rules=MAP ${REBOUND} 127.0.0.1, MAP ${OTHER_SITE} 127.0.0.1`]),
  ])
}, 60_000)
afterAll(async () => {
  await Promise.all([browser?.close(), dev?.stop(), new Promise((resolve) => other?.close(resolve))])
})

/** Runs of jobs.greet, asked as code on this machine asks (no Origin, no Fetch Metadata). */
async function greetRuns(): Promise<number> {
  const res = await fetch(`${dev.url}/__tasks/runs?task=jobs.greet&limit=500`)
  expect(res.status).toBe(200)
  return ((await res.json()) as { runs: unknown[] }).runs.length
}

describe('svc dev without a task secret, against pages of other origins in Chromium', () => {
  // A page on another loopback port is same-site (Fetch Metadata): refused for its Sec-Fetch-Site.
  // A page of another site sends its Origin with a POST: refused for it.
  const origins: Record<string, { origin: () => string; header: string }> = {
    'another loopback port': { origin: () => `http://127.0.0.1:${otherPort}`, header: 'Sec-Fetch-Site' },
    'another site': { origin: () => `http://${OTHER_SITE}:${otherPort}`, header: 'Origin' },
  }

  it.each(Object.keys(origins))('a no-cors fetch POST from a page of %s gets 403 and starts no run', async (which) => {
    const { origin } = origins[which]
    const before = await greetRuns()
    const page = await browser.newPage()
    try {
      const answered = page.waitForResponse((res) => res.url().endsWith('/__tasks/jobs.greet'))
      await page.goto(`${origin()}/fetch?svc=${encodeURIComponent(dev.url)}`)
      await expect.poll(() => page.title()).toBe('sent')
      // The answer is opaque to the page, and its body is not kept: its status is what the network saw.
      expect((await answered).status()).toBe(403)
    } finally {
      await page.close()
    }
    expect(await greetRuns()).toBe(before)
  })

  it.each(Object.keys(origins))('an HTML form POST (enctype text/plain) from a page of %s gets 403 and starts no run', async (which) => {
    const { origin, header } = origins[which]
    const before = await greetRuns()
    const page = await browser.newPage()
    try {
      const answered = page.waitForResponse((res) => res.url().endsWith('/__tasks/jobs.greet'))
      await page.goto(`${origin()}/form?svc=${encodeURIComponent(dev.url)}`)
      const answer = await answered
      expect(answer.status()).toBe(403)
      const { error } = await answer.json()
      expect(error).toContain(header)
      expect(error).toContain('SVC_TASK_SECRET')
    } finally {
      await page.close()
    }
    expect(await greetRuns()).toBe(before)
  })

  it('a DNS-rebound name reaching svc gets 403 for the admin surface and the dashboard', async () => {
    const rebound = dev.url.replace('127.0.0.1', REBOUND)
    const page = await browser.newPage()
    try {
      for (const path of ['/__tasks/runs', '/__svc/dashboard', '/__svc/dashboard/tasks']) {
        const res = await page.goto(`${rebound}${path}`)
        expect(res?.status(), path).toBe(403)
      }
      // And the rebound page's own same-origin requests, which is what the attack makes.
      const status = await page.evaluate(async () => (await fetch('/__tasks/runs')).status)
      expect(status).toBe(403)
    } finally {
      await page.close()
    }
  })

  it('the dashboard still reads the admin surface from its own origin', async () => {
    const page = await browser.newPage()
    try {
      await page.goto(`${dev.url}/__svc/dashboard`)
      const tasks = page.getByRole('region', { name: 'Tasks' }).getByRole('table')
      await expect.poll(() => tasks.getByRole('rowheader').count()).toBeGreaterThan(0)
      const status = await page.evaluate(async () => {
        const res = await fetch('/__tasks/jobs.greet', {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ name: 'own origin' }),
        })
        return res.status
      })
      expect(status).toBe(202)
    } finally {
      await page.close()
    }
  })
})
