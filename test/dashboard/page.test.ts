// The dashboard page: built from src/dashboard/ into a committed module that stays current,
// small and self-contained, and served only where the admin surface's rules allow.
import { readFile } from 'node:fs/promises'
import { fileURLToPath } from 'node:url'
import { gzipSync } from 'node:zlib'
import { afterEach, describe, expect, it } from 'vitest'
import { GENERATED_FILE, renderDashboardModule } from '../../scripts/build-dashboard.ts'
import { bundle } from '../../src/build/bundle.ts'
import { createSvcHandler, cronerClock, type RuntimeApiRoute, type SvcHandler } from '../../src/index.ts'
import { DASHBOARD_PAGE, startSvcServer } from '../../src/node.ts'
import { DASHBOARD_CSP, DASHBOARD_HTML } from '../../src/runtime/dashboard/page.generated.ts'

const routes: RuntimeApiRoute[] = [
  { path: '/api/jobs/nightly', module: { kind: 'task', schedule: '30 3 * * *', POST: () => 'swept' } },
  { path: '/api/jobs/zoned', module: { route: { kind: 'task', timezone: 'Asia/Tokyo' }, schedule: '0 9 * * 1', POST: () => 'ok' } },
  { path: '/api/jobs/once', module: { kind: 'task', POST: () => 'done' } },
]

const handlers: SvcHandler[] = []
afterEach(async () => {
  await Promise.all(handlers.splice(0).map((handler) => handler.runtime.close()))
})

function handler(env: Record<string, string>, dashboard?: boolean): SvcHandler {
  const created = createSvcHandler({ routes, env, dashboard, dashboardPage: DASHBOARD_PAGE, cron: cronerClock })
  handlers.push(created)
  return created
}

/** A task secret of the length a production server requires (32 bytes at least). */
const SECRET = 's3cret-0123456789abcdef0123456789ab'
const LOOPBACK = { remoteAddress: '127.0.0.1' }
const REMOTE = { remoteAddress: '203.0.113.9' }
// Asked by its loopback name: in development the page is served to requests made on this machine only.
const page = (h: SvcHandler, info?: { remoteAddress: string }, init?: RequestInit) =>
  h.fetch(new Request('http://localhost/__svc/dashboard', init), info)

describe('the built page', () => {
  it('is the build of the current sources (run npm run build:dashboard after changing src/dashboard/)', async () => {
    const fresh = (await readFile(GENERATED_FILE, 'utf8')) === (await renderDashboardModule())
    expect(fresh, 'src/runtime/dashboard/page.generated.ts is stale: run npm run build:dashboard').toBe(true)
  })

  it('weighs at most 40 KB gzipped', () => {
    expect(gzipSync(DASHBOARD_HTML).length).toBeLessThanOrEqual(40 * 1024)
  })

  it('loads nothing from the network: every script and style is inline, and the CSP allows only those and same-origin requests', () => {
    expect(DASHBOARD_HTML).not.toMatch(/<(script|link|img)[^>]+(src|href)=/i)
    expect(DASHBOARD_HTML).not.toMatch(/https?:\/\//)
    expect(DASHBOARD_CSP).toContain("default-src 'none'")
    expect(DASHBOARD_CSP).toContain("connect-src 'self'")
    expect(DASHBOARD_CSP).toMatch(/script-src 'sha256-[A-Za-z0-9+/=]+'/)
  })
})

describe('where the page is served', () => {
  it('in development, to loopback peers, with its CSP and no caching', async () => {
    const res = await page(handler({ NODE_ENV: 'development' }), LOOPBACK)
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8')
    expect(res.headers.get('content-security-policy')).toBe(DASHBOARD_CSP)
    expect(res.headers.get('cache-control')).toBe('no-store')
    expect(await res.text()).toBe(DASHBOARD_HTML)
  })

  it('in development, not to other peers, nor to hosts that report no peer', async () => {
    const h = handler({ NODE_ENV: 'development' })
    expect((await page(h, REMOTE)).status).toBe(404)
    expect((await page(h)).status).toBe(404)
  })

  it('in production, nowhere unless enabled', async () => {
    const h = handler({ NODE_ENV: 'production', SVC_TASK_SECRET: SECRET })
    expect((await page(h, LOOPBACK)).status).toBe(404)
    expect((await page(h, REMOTE)).status).toBe(404)
  })

  it('with dashboard: true or SVC_DASHBOARD=1, to every peer', async () => {
    expect((await page(handler({ NODE_ENV: 'production', SVC_TASK_SECRET: SECRET }, true), REMOTE)).status).toBe(200)
    expect((await page(handler({ NODE_ENV: 'production', SVC_DASHBOARD: '1' }), REMOTE)).status).toBe(200)
  })

  it('dashboard: false turns it off in development too', async () => {
    expect((await page(handler({ NODE_ENV: 'development' }, false), LOOPBACK)).status).toBe(404)
  })

  it('answers HEAD without a body and other methods with 405', async () => {
    const h = handler({ NODE_ENV: 'development' })
    const head = await page(h, LOOPBACK, { method: 'HEAD' })
    expect(head.status).toBe(200)
    expect(await head.text()).toBe('')
    const post = await page(h, LOOPBACK, { method: 'POST' })
    expect(post.status).toBe(405)
    expect(post.headers.get('allow')).toBe('GET, HEAD')
  })

  it('where the host ships no page, the page path says so with a 404 instead of an empty page', async () => {
    const bare = createSvcHandler({ routes, env: { NODE_ENV: 'production', SVC_DASHBOARD: '1' } })
    handlers.push(bare)
    const res = await page(bare, REMOTE)
    expect(res.status).toBe(404)
    expect(await res.json()).toMatchObject({ code: 'DASHBOARD_NOT_INCLUDED' })
  })

  it('stays out of an edge bundle of svc: only the Node server imports the page', async () => {
    const { code } = await bundle({ input: fileURLToPath(new URL('../../src/index.ts', import.meta.url)), platform: 'worker' })
    expect(code).toContain('__svc/dashboard')
    expect(code).not.toContain(DASHBOARD_CSP)
  })

  it('a dashboard option that is not a boolean is a TypeError naming it', () => {
    expect(() => createSvcHandler({ routes, dashboard: 'yes' as never })).toThrow(/dashboard must be a boolean \(got "yes"\)/)
  })

  it('startSvcServer passes dashboard: true through, and checks it', async () => {
    await expect(startSvcServer({ apiRoutes: routes, pages: [], port: 0, dashboard: 1 as never })).rejects.toThrow(
      /startSvcServer\(\): dashboard must be a boolean/,
    )
    const server = await startSvcServer({
      apiRoutes: routes,
      pages: [],
      port: 0,
      dashboard: true,
      env: { NODE_ENV: 'production', SVC_TASK_SECRET: SECRET },
    })
    try {
      expect((await fetch(`${server.url}/__svc/dashboard`)).status).toBe(200)
    } finally {
      await server.close()
    }
  })
})

describe('GET /__svc/dashboard/tasks', () => {
  const tasks = (h: SvcHandler, info: { remoteAddress: string }, headers?: Record<string, string>) =>
    h.fetch(new Request('http://localhost/__svc/dashboard/tasks', { headers }), info)

  it('lists each task with the zone and next tick of its schedule', async () => {
    const res = await tasks(handler({ NODE_ENV: 'development' }), LOOPBACK)
    expect(res.status).toBe(200)
    const body = (await res.json()) as { tasks: { name: string; timezone: string | null; nextRunAt: string | null }[] }
    const byName = Object.fromEntries(body.tasks.map((task) => [task.name, task]))
    expect(byName['jobs.once']).toMatchObject({ schedule: null, timezone: null, nextRunAt: null })
    const nightly = new Date(byName['jobs.nightly'].nextRunAt!)
    expect([nightly.getUTCHours(), nightly.getUTCMinutes()]).toEqual([3, 30])
    expect(nightly.getTime()).toBeGreaterThan(Date.now())
    expect(byName['jobs.zoned'].timezone).toBe('Asia/Tokyo')
    // 09:00 on a Monday in Tokyo is 00:00 UTC on that Monday.
    const zoned = new Date(byName['jobs.zoned'].nextRunAt!)
    expect([zoned.getUTCDay(), zoned.getUTCHours()]).toEqual([1, 0])
  })

  it('needs the task secret wherever the admin surface does', async () => {
    const h = handler({ NODE_ENV: 'production', SVC_TASK_SECRET: SECRET }, true)
    const denied = await tasks(h, REMOTE)
    expect(denied.status).toBe(401)
    expect(await denied.json()).toMatchObject({ code: 'UNAUTHORIZED' })
    expect((await tasks(h, REMOTE, { authorization: 'Bearer wrong' })).status).toBe(401)
    expect((await tasks(h, REMOTE, { authorization: `Bearer ${SECRET}` })).status).toBe(200)
  })

  it('is not there where the page is not served', async () => {
    const res = await tasks(handler({ NODE_ENV: 'production', SVC_TASK_SECRET: SECRET }), REMOTE, {
      authorization: `Bearer ${SECRET}`,
    })
    expect(res.status).toBe(404)
  })

  it('other paths under the dashboard are 404 NOT_FOUND naming the page', async () => {
    const res = await handler({ NODE_ENV: 'development' }).fetch(new Request('http://localhost/__svc/dashboard/nope'), LOOPBACK)
    expect(res.status).toBe(404)
    expect(await res.json()).toMatchObject({ code: 'NOT_FOUND', error: expect.stringContaining('/__svc/dashboard') })
  })
})
