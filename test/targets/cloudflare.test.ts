import { mkdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { Readable } from 'node:stream'
import { Miniflare, type MiniflareOptions } from 'miniflare'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { buildApp } from '../../src/build/build.ts'
import { builtOnce, copyFixtureApp, utcOnlyWarning, waitForOutput, writeApp, ZONED_TASKS } from './_app.ts'
import { TASK_SECRET, targetContract, type RunningTarget } from './contract.ts'
import { wranglerDryRun } from './_wrangler.ts'

/**
 * The built worker of `root` in miniflare, configured as `wrangler dev` would
 * from the generated wrangler.json (the tasks Durable Object included), with
 * the worker's own console output collected.
 */
async function startWorker(root: string, options: Partial<MiniflareOptions> = {}): Promise<{ mf: Miniflare; output: () => string }> {
  const out = join(root, '.output/cloudflare')
  let output = ''
  const { unstable_getMiniflareWorkerOptions } = await import('wrangler')
  const { workerOptions, main } = unstable_getMiniflareWorkerOptions(join(out, 'wrangler.json'))
  const mf = new Miniflare({
    ...(workerOptions as object),
    scriptPath: main!,
    modulesRoot: out,
    modules: true,
    bindings: { SVC_TASK_SECRET: TASK_SECRET },
    handleRuntimeStdio(stdout: Readable, stderr: Readable) {
      stdout.on('data', (chunk: Buffer) => (output += chunk))
      stderr.on('data', (chunk: Buffer) => (output += chunk))
    },
    ...options,
  } as MiniflareOptions)
  return { mf, output: () => output }
}

/** Miniflare's fetch, answered with a Response of this process (miniflare brings its own undici). */
async function dispatch(mf: Miniflare, request: Request): Promise<Response> {
  const body = request.body ? await request.arrayBuffer() : undefined
  const res = await mf.dispatchFetch(request.url, { method: request.method, headers: [...request.headers], body, redirect: 'manual' })
  const nullBody = [101, 204, 205, 304].includes(res.status)
  return new Response(nullBody ? null : await res.arrayBuffer(), { status: res.status, headers: [...res.headers] })
}

interface ScheduledWorker {
  scheduled(options: { cron: string }): Promise<{ outcome: string }>
}

const built = builtOnce('cloudflare')

targetContract({
  name: 'cloudflare',
  async start(): Promise<RunningTarget> {
    const { mf, output } = await startWorker((await built()).root)
    const worker = (await mf.getWorker()) as unknown as ScheduledWorker
    return {
      fetch: (request) => dispatch(mf, request),
      // The platform reads scheduled()'s outcome: `exception` is a failed
      // invocation in the dashboard and in Cron Trigger alerts. workerd
      // records no message with it; the worker's log line names the task.
      async cron(expression) {
        const from = output().length
        const { outcome } = await worker.scheduled({ cron: expression })
        if (outcome === 'ok') return { ok: true }
        if (outcome !== 'exception') throw new Error(`scheduled() ended in ${outcome}`)
        const [line] = await waitForOutput(() => output().slice(from), /^\[svc\] scheduled task .* failed.*$/m)
        return { ok: false, error: line }
      },
      close: () => mf.dispose(),
    }
  },
})

describe('svc build --target cloudflare', () => {
  let mf: Miniflare | undefined
  afterAll(() => mf?.dispose())

  it('leaves hot routes out with the exact warning', async () => {
    expect((await built()).build.warnings).toEqual([
      '[svc] 1 hot route(s) cannot run on cloudflare and were not bundled: /api/live — deploy them to a persistent host',
    ])
  })

  it('does not serve the left-out hot route', async () => {
    ;({ mf } = await startWorker((await built()).root))
    const res = await mf.dispatchFetch('http://localhost/api/live')
    expect(res.status).toBe(404)
  })

  // The runs change in the tasks object and the worker reports no peer
  // address: what serves the streams, exempts loopback peers or claims a
  // shared store's work is dead weight there. Run tokens stay: a page sends
  // a run signals with one.
  it('leaves out the event streams, the loopback exemption and the claims of shared work', async () => {
    const worker = await readFile(join((await built()).root, '.output/cloudflare/index.mjs'), 'utf8')
    for (const part of ['TOO_MANY_EVENT_STREAMS', 'is not a loopback name', 'SharedWorkClaims']) {
      expect(worker, part).not.toContain(part)
    }
    expect(worker).toContain('NOT_IMPLEMENTED')
    expect(worker).toContain('RUN_TOKEN_NOT_ALLOWED')
  })

  it('writes wrangler.json with main, compatibility date and every schedule once as a cron trigger', async () => {
    const wrangler = JSON.parse(await readFile(join((await built()).root, '.output/cloudflare/wrangler.json'), 'utf8'))
    expect(wrangler.main).toBe('index.mjs')
    expect(wrangler.compatibility_date).toMatch(/^\d{4}-\d{2}-\d{2}$/)
    expect(wrangler.triggers.crons.sort()).toEqual(['*/10 * * * *', '0 3 * * *'])
    // The targets app has no public/ folder: no static assets to declare.
    expect(wrangler.assets).toBeUndefined()
  })

  // Cloudflare cron triggers fire on UTC only: without a warning, a task
  // meant for 09:00 in Paris would silently run at 09:00 UTC.
  it("warns that a task's time zone is not applied, naming the task", async () => {
    const app = await writeApp(ZONED_TASKS)
    try {
      expect((await buildApp({ root: app.root, target: 'cloudflare' })).warnings).toEqual([utcOnlyWarning('cloudflare')])
    } finally {
      await app.cleanup()
    }
  })
})

describe('svc build --target cloudflare, an app with public/, deployed with wrangler', () => {
  let app: Awaited<ReturnType<typeof copyFixtureApp>>
  let out: string
  let mf: Miniflare

  beforeAll(async () => {
    app = await copyFixtureApp('static-files-app')
    // Files in public/ at the paths of a route and of the worker's own endpoints.
    await mkdir(join(app.root, 'public/api'), { recursive: true })
    await writeFile(join(app.root, 'public/api/hello'), 'a file, not the route\n')
    await writeFile(join(app.root, 'public/__health'), 'a file, not the health check\n')
    await buildApp({ root: app.root, target: 'cloudflare' })
    out = join(app.root, '.output/cloudflare')
    // Wrangler's own reading of wrangler.json, as `wrangler dev` runs it.
    const { unstable_getMiniflareWorkerOptions } = await import('wrangler')
    const { workerOptions, main } = unstable_getMiniflareWorkerOptions(join(out, 'wrangler.json'))
    mf = new Miniflare({
      ...(workerOptions as object),
      modules: true,
      scriptPath: main!,
      modulesRoot: out,
      bindings: { SVC_TASK_SECRET: TASK_SECRET },
    })
  })
  afterAll(async () => {
    await mf?.dispose()
    await app?.cleanup()
  })

  it('serves the files of public/ as static assets', async () => {
    const res = await mf.dispatchFetch('http://localhost/hello.txt')
    expect(res.status).toBe(200)
    expect(await res.text()).toBe('served from public/\n')
  })

  it('still runs API routes and the worker endpoints in the worker, whatever public/ holds', async () => {
    expect(await (await mf.dispatchFetch('http://localhost/api/hello')).json()).toEqual({ hello: 'static app' })
    expect(await (await mf.dispatchFetch('http://localhost/__health')).json()).toMatchObject({ ok: true })
    // The app has no task: the worker itself answers that, not the static assets.
    const tasks = await mf.dispatchFetch('http://localhost/__tasks')
    expect(tasks.status).toBe(404)
    expect(((await tasks.json()) as { code: string }).code).toBe('NO_TASKS')
    expect((await mf.dispatchFetch('http://localhost/missing.txt')).status).toBe(404)
  })

  // index.mjs is already one minified ES module: bundled again, it would
  // grow (wrangler does not minify) and no longer be the file that was tested.
  it('is accepted by wrangler deploy, which uploads index.mjs as it is, without bundling it again', async () => {
    const dry = await wranglerDryRun(out)
    try {
      expect(dry.code, dry.output).toBe(0)
      expect(await readFile(join(dry.outdir, 'index.mjs'))).toEqual(await readFile(join(out, 'index.mjs')))
    } finally {
      await dry.cleanup()
    }
  })
})

describe('svc build --target cloudflare and Node builtins', () => {
  let app: Awaited<ReturnType<typeof writeApp>> | undefined
  afterEach(async () => {
    await app?.cleanup()
    app = undefined
  })

  it('fails on a serverless route that reaches a Node builtin, naming the file that imports it', async () => {
    app = await writeApp({
      'src/api/_disk.ts': `import { readFileSync } from 'node:fs'\nexport const read = () => readFileSync('/etc/hostname', 'utf8')\n`,
      'src/api/host.ts': `import { read } from './_disk.ts'\nexport function GET() { return { host: read() } }\n`,
      'src/api/hash.ts': `import { createHash } from 'crypto'\nexport function GET() { return createHash('sha1').digest('hex') }\n`,
    })
    const failure = await buildApp({ root: app.root, target: 'cloudflare' }).then(
      () => undefined,
      (error: Error) => error.message,
    )
    expect(failure).toMatch(/Node builtins cannot be bundled for an edge worker/)
    expect(failure).toContain(`node:fs (imported by ${join(app.root, 'src/api/_disk.ts')})`)
    expect(failure).toContain(`crypto (imported by ${join(app.root, 'src/api/hash.ts')})`)
  })

  // `events`, `buffer` and `util` are also npm packages written for browsers;
  // when the app installs one, a bare import means that package.
  it('bundles an installed package that shares its name with a Node builtin', async () => {
    app = await writeApp({
      'package.json': JSON.stringify({ name: 'worker-app', dependencies: { events: '^3.3.0' } }),
      'node_modules/events/package.json': JSON.stringify({ name: 'events', version: '3.3.0', main: 'events.js' }),
      'node_modules/events/events.js': `export class EventEmitter { emit() { return 'from the events package' } }\n`,
      'src/api/emit.ts': `import { EventEmitter } from 'events'\nexport function GET() { return { said: new EventEmitter().emit() } }\n`,
    })
    await buildApp({ root: app.root, target: 'cloudflare' })
    const { mf } = await startWorker(app.root)
    try {
      const res = await mf.dispatchFetch('http://worker/api/emit')
      expect(await res.json()).toEqual({ said: 'from the events package' })
    } finally {
      await mf.dispose()
    }
  })

  it('still fails on the node: form of a builtin, even with a package of that name installed', async () => {
    app = await writeApp({
      'node_modules/events/package.json': JSON.stringify({ name: 'events', version: '3.3.0', main: 'events.js' }),
      'node_modules/events/events.js': `export class EventEmitter {}\n`,
      'src/api/emit.ts': `import { EventEmitter } from 'node:events'\nexport function GET() { return { ok: !!EventEmitter } }\n`,
    })
    await expect(buildApp({ root: app.root, target: 'cloudflare' })).rejects.toThrow(/node:events \(imported by/)
  })
})
