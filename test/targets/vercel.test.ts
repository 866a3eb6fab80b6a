import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { readFile, stat } from 'node:fs/promises'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildApp, type BuildResult } from '../../src/build/build.ts'
import { copyFixtureApp, pollRun } from './_app.ts'

describe('svc build --target vercel', () => {
  let app: Awaited<ReturnType<typeof copyFixtureApp>>
  let build: BuildResult
  let server: Server
  let base: string
  const out = () => join(app.root, '.vercel/output')

  beforeAll(async () => {
    app = await copyFixtureApp()
    build = await buildApp({ root: app.root, target: 'vercel' })
    process.env.CRON_SECRET = 'cron-secret'
    process.env.THEN_TASK_SECRET = 'task-secret'
    const { default: handler } = await import(pathToFileURL(join(out(), 'functions/__svc.func/index.mjs')).href)
    // The function's (req, res) handler behind a real Node server, as Vercel's Node launcher calls it.
    server = createServer((req, res) => void handler(req, res))
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  })
  afterAll(async () => {
    delete process.env.CRON_SECRET
    delete process.env.THEN_TASK_SECRET
    await new Promise((resolve) => server?.close(resolve))
    await app?.cleanup()
  })

  it('follows the Build Output API v3 layout', async () => {
    const config = JSON.parse(await readFile(join(out(), 'config.json'), 'utf8'))
    expect(config.version).toBe(3)
    expect(config.routes).toEqual([{ handle: 'filesystem' }, { src: '/(.*)', dest: '/__svc' }])
    expect(config.crons).toEqual([{ path: '/__svc/cron?cron=*%2F10%20*%20*%20*%20*', schedule: '*/10 * * * *' }])
    const vc = JSON.parse(await readFile(join(out(), 'functions/__svc.func/.vc-config.json'), 'utf8'))
    expect(vc).toMatchObject({ handler: 'index.mjs', launcherType: 'Nodejs' })
    expect(vc.runtime).toMatch(/^nodejs\d+\.x$/)
    expect((await stat(join(out(), 'functions/__svc.func/index.mjs'))).size).toBeGreaterThan(0)
    expect(build.warnings[0]).toMatch(/^\[svc\] 1 hot route\(s\) cannot run on vercel and were not bundled: \/api\/live/)
  })

  it('serves routes through the function handler', async () => {
    const res = await fetch(`${base}/api/hello?name=vercel`)
    expect(await res.json()).toEqual({ hello: 'vercel' })
    const post = await fetch(`${base}/api/hello`, { method: 'POST', body: JSON.stringify({ b: 2 }), headers: { 'content-type': 'application/json' } })
    expect(post.status).toBe(201)
    expect(await post.json()).toEqual({ echo: { b: 2 } })
  })

  it('runs a task started over the admin surface', async () => {
    const auth = { authorization: 'Bearer task-secret' }
    const res = await fetch(`${base}/__tasks/jobs.double`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: '{"n":4}' })
    expect(res.status).toBe(202)
    const { id } = (await res.json()) as { id: string }
    const run = await pollRun((runId) => fetch(`${base}/__tasks/${runId}`, { headers: auth }), id)
    expect(run).toMatchObject({ status: 'completed', result: { doubled: 8 } })
  })

  // Without the platform's waitUntil the function may be frozen once it has answered,
  // so the answer waits for the run: the record read right after it is final.
  it('answers a task started over HTTP only once the run has ended, without a platform waitUntil', async () => {
    const auth = { authorization: 'Bearer task-secret' }
    const res = await fetch(`${base}/__tasks/jobs.slow`, { method: 'POST', headers: auth })
    expect(res.status).toBe(202)
    const { id, status } = (await res.json()) as { id: string; status: string }
    expect(status).toBe('running')
    const run = await fetch(`${base}/__tasks/${id}`, { headers: auth })
    expect(await run.json()).toMatchObject({ status: 'completed', result: { slept: 100 } })
  })

  it('fires cron tasks for the cron request, with CRON_SECRET', async () => {
    const denied = await fetch(`${base}/__svc/cron?cron=${encodeURIComponent('*/10 * * * *')}`)
    expect(denied.status).toBe(401)
    const res = await fetch(`${base}/__svc/cron?cron=${encodeURIComponent('*/10 * * * *')}`, { headers: { authorization: 'Bearer cron-secret' } })
    expect(res.status).toBe(200)
    expect(await res.json()).toMatchObject({ ok: true, runs: [{ taskName: 'jobs.tick', status: 'completed' }] })
  })
})

describe('svc build --target vercel, a scheduled task that fails', () => {
  let app: Awaited<ReturnType<typeof copyFixtureApp>>
  let server: Server
  let base: string

  beforeAll(async () => {
    app = await copyFixtureApp('failing-cron-app')
    await buildApp({ root: app.root, target: 'vercel' })
    process.env.CRON_SECRET = 'cron-secret'
    const { default: handler } = await import(pathToFileURL(join(app.root, '.vercel/output/functions/__svc.func/index.mjs')).href)
    server = createServer((req, res) => void handler(req, res))
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  })
  afterAll(async () => {
    delete process.env.CRON_SECRET
    await new Promise((resolve) => server?.close(resolve))
    await app?.cleanup()
  })

  // Vercel records a cron invocation as failed by its status code.
  it('answers the cron request with 500 and the summary of every run', async () => {
    const res = await fetch(`${base}/__svc/cron?cron=${encodeURIComponent('0 3 * * *')}`, { headers: { authorization: 'Bearer cron-secret' } })
    expect(res.status).toBe(500)
    const body = (await res.json()) as { ok: boolean; code: string; error: string; runs: Array<{ id: string; taskName: string; status: string }> }
    expect(body).toMatchObject({ ok: false, code: 'CRON_RUN_FAILED' })
    expect(body.runs.map(({ taskName, status }) => ({ taskName, status })).sort((a, b) => a.taskName.localeCompare(b.taskName))).toEqual([
      { taskName: 'jobs.broken', status: 'failed' },
      { taskName: 'jobs.fine', status: 'completed' },
    ])
    const broken = body.runs.find((run) => run.taskName === 'jobs.broken')!
    expect(body.error).toContain(`jobs.broken (run ${broken.id}: the nightly import failed)`)
  })
})
