// A built app carries only the parts of svc it uses. A worker or server of
// routes has no task engine, run store or admin surface in its bundle, opens
// no store and writes no `.svc/`; the task paths answer 404 NO_TASKS. The
// reference apps are those `npm run bench:targets` measures.
import { spawn } from 'node:child_process'
import { cp, mkdtemp, readdir, readFile, rm, symlink } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Miniflare } from 'miniflare'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildApp } from '../../src/build/build.ts'
import { startBuilt, stop } from '../targets/_server-runtime.ts'

/** Class names the minifier keeps: one of each is in a bundle that carries the task engine or a run store. */
const ENGINE_MARKERS = ['MemoryRunStore', 'SqliteRunStore', 'DurableObjectRunStore']

let routesRoot: string
let tasksRoot: string

async function copyApp(name: string): Promise<string> {
  const root = await mkdtemp(join(tmpdir(), `svc-parts-${name}-`))
  await cp(fileURLToPath(new URL(`../../bench/_apps/${name}`, import.meta.url)), root, { recursive: true })
  // A node build keeps the app's dependencies (valibot) external: they resolve from here, as from an installed app.
  await symlink(fileURLToPath(new URL('../../node_modules', import.meta.url)), join(root, 'node_modules'))
  return root
}

beforeAll(async () => {
  routesRoot = await copyApp('routes')
  tasksRoot = await copyApp('tasks')
  for (const root of [routesRoot, tasksRoot]) {
    await buildApp({ root, target: 'cloudflare' })
    await buildApp({ root, target: 'node' })
  }
  await buildApp({ root: routesRoot, target: 'bun' })
}, 120_000)

afterAll(async () => {
  for (const root of [routesRoot, tasksRoot]) if (root) await rm(root, { recursive: true, force: true })
})

const read = (root: string, file: string) => readFile(join(root, file), 'utf8')

describe('what a bundle carries', () => {
  it('a worker or server of routes carries no task engine and no run store; one with a task does', async () => {
    for (const file of ['.output/cloudflare/index.mjs', '.output/node/server.mjs', '.output/bun/server.mjs']) {
      const code = await read(routesRoot, file)
      for (const marker of ENGINE_MARKERS) expect(code, `${file} holds ${marker}`).not.toContain(marker)
    }
    // The markers are real: the task app's bundles hold them.
    expect(await read(tasksRoot, '.output/cloudflare/index.mjs')).toContain('DurableObjectRunStore')
    expect(await read(tasksRoot, '.output/node/server.mjs')).toContain('SqliteRunStore')
  })

  it('a worker of routes binds no tasks object and lists no cron trigger', async () => {
    const wrangler = JSON.parse(await read(routesRoot, '.output/cloudflare/wrangler.json'))
    expect(wrangler.durable_objects).toBeUndefined()
    expect(wrangler.triggers).toEqual({ crons: [] })
  })
})

describe('a worker of routes', () => {
  let mf: Miniflare
  beforeAll(async () => {
    const out = join(routesRoot, '.output/cloudflare')
    mf = new Miniflare({ scriptPath: join(out, 'index.mjs'), modulesRoot: out, modules: true, compatibilityDate: '2025-09-01' })
  })
  afterAll(() => mf?.dispose())

  it('answers its routes, validates their schema, and says the task paths need a task', async () => {
    const hello = await mf.dispatchFetch('http://worker/api/hello')
    expect(await hello.json()).toEqual({ hello: 'world' })
    const user = await mf.dispatchFetch('http://worker/api/users/42')
    expect(await user.json()).toEqual({ id: 42, name: 'user 42' })
    const invalid = await mf.dispatchFetch('http://worker/api/users/ada')
    expect(invalid.status).toBe(400)
    expect(((await invalid.json()) as { code: string }).code).toBe('VALIDATION_FAILED')
    for (const path of ['/__tasks', '/__tasks/jobs.welcome', '/__events/signup']) {
      const res = await mf.dispatchFetch(`http://worker${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{}',
      })
      expect(res.status, path).toBe(404)
      const body = (await res.json()) as { code: string; error: string }
      expect(body.code).toBe('NO_TASKS')
      expect(body.error).toContain("kind: 'task'")
    }
  })
})

describe('a built server of routes', () => {
  /** Starts server.mjs with Node in `cwd`; resolves with its base URL once it logs it. */
  function startNode(cwd: string, env: Record<string, string> = {}) {
    const child = spawn(process.execPath, [join(routesRoot, '.output/node/server.mjs')], {
      cwd,
      env: { ...process.env, PORT: '0', HOST: '127.0.0.1', NODE_ENV: 'production', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let output = ''
    const base = new Promise<string>((resolve, reject) => {
      const take = (chunk: Buffer) => {
        output += chunk
        const match = output.match(/listening on (http:\/\/\S+)/)
        if (match) resolve(match[1])
      }
      child.stdout.on('data', take)
      child.stderr.on('data', take)
      child.once('exit', (code) => reject(new Error(`server exited with ${code}:\n${output}`)))
    })
    return { child, base, output: () => output }
  }

  it('opens no run store and writes no .svc/, on Node and on Bun', async () => {
    const cwd = await mkdtemp(join(tmpdir(), 'svc-parts-cwd-'))
    const node = startNode(cwd)
    try {
      const base = await node.base
      expect(await (await fetch(`${base}/api/hello`)).json()).toEqual({ hello: 'world' })
      const tasks = await fetch(`${base}/__tasks`)
      expect(tasks.status).toBe(404)
      expect(((await tasks.json()) as { code: string }).code).toBe('NO_TASKS')
      expect(node.output()).not.toContain('svc runs:')
    } finally {
      node.child.kill('SIGKILL')
    }
    const bun = await startBuilt('bun', join(routesRoot, '.output/bun/server.mjs'), { NODE_ENV: 'production' }, { cwd })
    try {
      expect(await (await fetch(`${bun.base}/api/users/7`)).json()).toEqual({ id: 7, name: 'user 7' })
    } finally {
      await stop(bun)
    }
    expect(await readdir(cwd)).toEqual([])
    await rm(cwd, { recursive: true, force: true })
  })

  it('says so when SVC_STORE_URL names a store it will not open', async () => {
    const cwd = await mkdtemp(join(tmpdir(), 'svc-parts-cwd-'))
    const node = startNode(cwd, { SVC_STORE_URL: 'sqlite:runs.db' })
    try {
      await node.base
      expect(node.output()).toContain('SVC_STORE_URL is set, but this app has no tasks')
      expect(await readdir(cwd)).toEqual([])
    } finally {
      node.child.kill('SIGKILL')
      await rm(cwd, { recursive: true, force: true })
    }
  })
})

describe('a server started without the task part', () => {
  it('refuses a task route, a run store or a runtime, naming the fix, and opens nothing', async () => {
    const { startServer } = await import('../../src/node/server.ts')
    const { MemoryRunStore } = await import('../../src/runtime/tasks/index.ts')
    const task = { path: '/api/jobs/report', module: { route: { kind: 'task' as const }, POST: async () => 'done' } }
    const base = { pages: [], port: 0, installSignalHandlers: false, env: { NODE_ENV: 'test' } }
    await expect(startServer({ ...base, apiRoutes: [task] }, {})).rejects.toThrow(
      'startSvcServer(): route /api/jobs/report is a task, but this server was built for an app without tasks; build the app again (svc build)',
    )
    await expect(startServer({ ...base, apiRoutes: [], store: new MemoryRunStore() }, {})).rejects.toThrow(
      'a run store or runtime is given, but this server was built for an app without tasks',
    )
  })
})
