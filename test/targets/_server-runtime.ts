/**
 * The suites of the targets whose output is one long-lived server on a
 * JavaScript runtime other than Node (bun, deno), run by each target's test
 * file against the runtime itself: the built server is started with the
 * runtime's binary (an npm package among svc's devDependencies) as a child
 * process, on an ephemeral port, and spoken to over real HTTP and real
 * WebSockets. The node target's suite (node.test.ts) drives its built
 * server through the same `contractTarget` and `stop`.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import WebSocket from 'ws'
import { buildApp } from '../../src/build/build.ts'
import type { TargetName } from '../../src/build/target.ts'
import type { RunRecord } from '../../src/types.ts'
import { SSE_HEARTBEAT_MS } from '../../src/runtime/admin/run-change-stream.ts'
import { until } from '../tasks/_helpers.ts'
import { type BuiltApp, builtOnce, pollRun, waitForOutput, writeApp, ZONED_TASKS } from './_app.ts'
import { type RunningTarget, TASK_SECRET, targetContract } from './contract.ts'
import { hostileClientCases } from './_hostile.ts'

export type ServerRuntime = 'bun' | 'deno'

/** A built server.mjs running as a child process. */
export interface BuiltServer {
  child: ChildProcess
  base: string
  output: () => string
  /** Fires `cron` in the server process (only when started with `cronOnDemand`) and resolves with the runs once they ended. */
  fireCron: (cron: string) => Promise<Array<{ id: string; taskName: string; status: string }>>
}

const require = createRequire(import.meta.url)
const cronModule = fileURLToPath(new URL('./_web-cron.ts', import.meta.url))

/** The runtime's binary, from the npm package that ships it for this platform. */
export function runtimeBinary(runtime: ServerRuntime): string {
  const platform = `${process.platform}-${process.arch === 'x64' ? 'x64' : 'aarch64'}`
  const [pkg, file] =
    runtime === 'bun'
      ? [`@oven/bun-${platform.replace('aarch64', 'arm64')}`, 'bin/bun']
      : [`@deno/${platform}${process.platform === 'linux' ? '-glibc' : ''}`, process.platform === 'win32' ? 'deno.exe' : 'deno']
  return join(dirname(require.resolve(`${pkg}/package.json`)), file)
}

/**
 * Starts a built server.mjs as the start script of its package.json does,
 * with the runtime's binary, on an ephemeral port, and resolves once it logs
 * the address it listens on. With `cronOnDemand`, ./_web-cron.ts is loaded
 * first, which fires a cron schedule when asked on stdin.
 */
export async function startBuilt(
  runtime: ServerRuntime,
  file: string,
  env: Record<string, string | undefined>,
  options: { cronOnDemand?: boolean; cwd?: string } = {},
): Promise<BuiltServer> {
  const pkg = JSON.parse(await readFile(join(dirname(file), 'package.json'), 'utf8')) as { scripts: { start: string } }
  const [command, ...args] = pkg.scripts.start.split(' ')
  expect(command).toBe(runtime)
  let main = file
  if (options.cronOnDemand) {
    // An entry that loads ./_web-cron.ts before the server, as a preload
    // would: Deno runs a --preload module's event loop to its end first.
    main = join(dirname(file), '_cron-on-demand.mjs')
    await writeFile(main, `import ${JSON.stringify(pathToFileURL(cronModule).href)}\nimport './server.mjs'\n`)
    // The cron module imports svc from its sources, whose dependencies are in
    // this repository's node_modules, not in the output's package.json.
    if (runtime === 'deno') args.splice(1, 0, '--node-modules-dir=manual')
  }
  args[args.indexOf('server.mjs')] = main
  const child = spawn(runtimeBinary(runtime), args, {
    env: { ...process.env, PORT: '0', HOST: '127.0.0.1', NO_COLOR: '1', ...env },
    // Runs are kept in .svc/runs.db under the working directory.
    cwd: options.cwd ?? dirname(file),
    stdio: ['pipe', 'pipe', 'pipe'],
  })
  let output = ''
  let asked = 0
  const answers = new Map<number, (answer: { runs?: Array<{ id: string; taskName: string; status: string }>; error?: string }) => void>()
  const fireCron: BuiltServer['fireCron'] = (cron) =>
    new Promise((resolve, reject) => {
      const id = ++asked
      answers.set(id, (answer) => (answer.error ? reject(new Error(answer.error)) : resolve(answer.runs!)))
      child.stdin!.write(`${JSON.stringify({ id, cron })}\n`)
    })
  return new Promise((resolve, reject) => {
    // The part of a line of stdout whose end has not arrived yet.
    let partial = ''
    child.stdout!.on('data', (chunk) => {
      output += chunk
      const lines = (partial + chunk).split('\n')
      partial = lines.pop()!
      for (const line of lines) {
        if (!line.startsWith('svc-cron ')) continue
        const answer = JSON.parse(line.slice('svc-cron '.length))
        answers.get(answer.id)?.(answer)
        answers.delete(answer.id)
      }
      const match = output.match(/listening on (http:\/\/\S+)/)
      if (match) resolve({ child, base: match[1].replace('0.0.0.0', '127.0.0.1'), output: () => output, fireCron })
    })
    child.stderr!.on('data', (chunk) => (output += chunk))
    child.on('exit', (code, signal) => reject(new Error(`server exited with ${code ?? signal}:\n${output}`)))
    setTimeout(() => reject(new Error(`server did not log its address within 20 s:\n${output}`)), 20_000).unref()
  })
}

/** Ends a server with `signal` (SIGKILL unless told) and resolves with the signal it ended by. */
export async function stop(server: BuiltServer | undefined, signal: NodeJS.Signals = 'SIGKILL'): Promise<NodeJS.Signals | null> {
  if (!server || server.child.exitCode !== null || server.child.signalCode !== null) return server?.child.signalCode ?? null
  const exited = new Promise<NodeJS.Signals | null>((resolve) => server.child.once('exit', (_code, ended) => resolve(ended)))
  server.child.kill(signal)
  return exited
}

/** Opens a WebSocket with the `ws` client, which can send an `Origin` header as a browser does. */
function openSocket(url: string, origin?: string): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, origin ? { origin } : {})
    ws.once('open', () => resolve(ws))
    ws.once('unexpected-response', (_req, res) => reject(new Error(`handshake answered ${res.statusCode}`)))
    ws.once('error', reject)
  })
}

function nextMessage(ws: WebSocket): Promise<{ data: string | Buffer; binary: boolean }> {
  return new Promise((resolve) => ws.once('message', (data, binary) => resolve({ data: binary ? (data as Buffer) : String(data), binary })))
}

function closed(ws: WebSocket): Promise<{ code: number; reason: string }> {
  return new Promise((resolve) => ws.once('close', (code, reason) => resolve({ code, reason: String(reason) })))
}

const AUTH = { authorization: `Bearer ${TASK_SECRET}` }
/** How long an idle event stream must live. */
const IDLE_STREAM_MS = 30_000

/** Runs a TypeScript file of this repository with the runtime, to its end; resolves with its exit code and output. */
function runScript(runtime: ServerRuntime, file: string): Promise<{ code: number | null; output: string }> {
  // Deno reads this repository's node_modules for svc's dependencies.
  const args = runtime === 'bun' ? [file] : ['run', '--allow-all', '--node-modules-dir=manual', file]
  const child = spawn(runtimeBinary(runtime), args, { env: { ...process.env, NO_COLOR: '1' }, stdio: ['ignore', 'pipe', 'pipe'] })
  let output = ''
  child.stdout!.on('data', (chunk) => (output += chunk))
  child.stderr!.on('data', (chunk) => (output += chunk))
  return new Promise((resolve) => child.once('exit', (code) => resolve({ code, output })))
}

/**
 * The target contract's view of a built server started with `cronOnDemand`:
 * requests go to it over HTTP, and cron schedules are fired in its process.
 * A server has no platform scheduler to report to: it reports a failed
 * scheduled run as an error line on stderr, naming the task and the run,
 * for the process manager's log.
 */
export function contractTarget(server: BuiltServer): RunningTarget {
  return {
    async fetch(request) {
      const url = new URL(request.url)
      const body = request.body ? await request.arrayBuffer() : undefined
      return fetch(`${server.base}${url.pathname}${url.search}`, {
        method: request.method,
        headers: request.headers,
        body,
        redirect: 'manual',
      })
    },
    async cron(expression) {
      const runs = await server.fireCron(expression)
      const failed = runs.filter((run) => run.status === 'failed')
      if (failed.length === 0) return { ok: true }
      const lines = await Promise.all(
        failed.map(
          async (run) => (await waitForOutput(server.output, new RegExp(`^\\[svc\\] scheduled task .*\\(run ${run.id}\\).*$`, 'm')))[0],
        ),
      )
      return { ok: false, error: lines.join('\n') }
    },
    close: async () => void (await stop(server)),
  }
}

/**
 * What every server target's build keeps, on the targets app (which has no
 * public/ folder) built for `target` and its server, started.
 */
export function builtServerCases(target: 'node' | ServerRuntime, built: () => Promise<BuiltApp>, server: () => BuiltServer): void {
  const out = async () => join((await built()).root, `.output/${target}`)

  it('keeps every route, hot ones included, without a warning', async () => {
    expect((await built()).build.warnings).toEqual([])
  })

  it(`writes server.mjs, a package.json whose start script runs it on ${target}, and a Dockerfile`, async () => {
    expect((await stat(join(await out(), 'server.mjs'))).size).toBeGreaterThan(0)
    const pkg = JSON.parse(await readFile(join(await out(), 'package.json'), 'utf8'))
    expect(pkg).toMatchObject({ type: 'module', main: 'server.mjs', dependencies: {} })
    expect(pkg.scripts.start).toMatch(new RegExp(`^${target} .*server\\.mjs$`))
    const dockerfile = (await readFile(join(await out(), 'Dockerfile'), 'utf8')).split('\n')
    expect(dockerfile.find((line) => line.startsWith('CMD '))).toMatch(new RegExp(`^CMD \\["${target}",.*"server\\.mjs"\\]$`))
    expect(dockerfile).toContain(`USER ${target}`)
  })

  it('serves the hot route over WebSocket', async () => {
    const ws = await openSocket(`${server().base.replace('http', 'ws')}/api/live`)
    ws.send('ping')
    expect((await nextMessage(ws)).data).toBe('ping')
    ws.close()
  })

  // Naming a public/ folder that is not there would only make every start warn that it does not exist.
  it('starts an app without public/ with no static directory and no warning about one', async () => {
    expect(await readFile(join(await out(), 'server.mjs'), 'utf8')).not.toContain('./public')
    expect((await fetch(`${server().base}/missing.txt`)).status).toBe(404)
    expect(server().output()).not.toMatch(/staticDirs|is not a directory/)
  })

  it('applies task time zones in its own scheduler, without a warning', async () => {
    const app = await writeApp(ZONED_TASKS)
    try {
      expect((await buildApp({ root: app.root, target })).warnings).toEqual([])
    } finally {
      await app.cleanup()
    }
  })
}

export function serverRuntimeSuites(runtime: ServerRuntime): void {
  const target = runtime as TargetName
  const outDir = `.output/${runtime}`
  const built = builtOnce(target)
  const serverFile = async () => join((await built()).root, outDir, 'server.mjs')
  const webApp = builtOnce(target, 'web-server-app')
  const webServerFile = async () => join((await webApp()).root, outDir, 'server.mjs')

  targetContract({
    name: runtime,
    async start() {
      // The in-process scheduler is off, as for an app whose cron is fired
      // from outside, so that no tick of its own lands in the middle of a
      // case: the driver fires each schedule through runScheduledTasks.
      const server = await startBuilt(
        runtime,
        await serverFile(),
        { NODE_ENV: 'production', SVC_TASK_SECRET: TASK_SECRET, SVC_DISABLE_IN_PROCESS_CRON: '1' },
        { cronOnDemand: true },
      )
      return contractTarget(server)
    },
  })

  describe(`svc build --target ${runtime}`, () => {
    let server: BuiltServer

    beforeAll(async () => {
      server = await startBuilt(runtime, await serverFile(), { NODE_ENV: 'production', SVC_TASK_SECRET: TASK_SECRET })
    })
    afterAll(() => stop(server))

    builtServerCases(runtime, built, () => server)
    hostileClientCases(runtime, () => server)

    // Docker cannot run here: the Dockerfile's health check command is run as it would run inside the container.
    it(`writes a Dockerfile whose HEALTHCHECK asks /__health with ${runtime}, the image having no curl`, async () => {
      const line = (await readFile(join((await built()).root, outDir, 'Dockerfile'), 'utf8'))
        .split('\n')
        .find((l) => l.startsWith('HEALTHCHECK '))!
      const [command, ...args] = JSON.parse(line.slice(line.indexOf(' CMD ') + 5)) as string[]
      expect(command).toBe(runtime)
      expect(args.join(' ')).toContain('/__health')
      const probe = (port: string) =>
        new Promise<number | null>((resolve) => {
          const child = spawn(runtimeBinary(runtime), args, { env: { ...process.env, PORT: port }, stdio: 'ignore' })
          child.once('exit', resolve)
        })
      const probed = await startBuilt(runtime, await serverFile(), { NODE_ENV: 'production' })
      const port = new URL(probed.base).port
      expect(await probe(port)).toBe(0)
      await stop(probed)
      expect(await probe(port)).toBe(1)
    })

    it('refuses to run on Node, naming the target it was built for', async () => {
      const child = spawn(process.execPath, [await serverFile()], { env: { ...process.env, PORT: '0' }, stdio: ['ignore', 'pipe', 'pipe'] })
      let output = ''
      child.stderr!.on('data', (chunk) => (output += chunk))
      const code = await new Promise((resolve) => child.once('exit', resolve))
      expect(code).not.toBe(0)
      expect(output).toContain(`svc build --target ${runtime}`)
    })
  })

  describe(`the server built for ${runtime}`, () => {
    const servers: BuiltServer[] = []
    const start = async (env: Record<string, string | undefined> = {}) => {
      const server = await startBuilt(runtime, await webServerFile(), { NODE_ENV: 'production', SVC_TASK_SECRET: TASK_SECRET, ...env })
      servers.push(server)
      return server
    }
    let server: BuiltServer
    const ws = (path: string, origin?: string) => openSocket(`${server.base.replace('http', 'ws')}${path}`, origin)
    const closes = async () => ((await (await fetch(`${server.base}/api/closes`)).json()) as { closes: Array<[number, string]> }).closes

    // An event stream opened as the server starts and left idle (no run
    // changes), read in the background: the test before the last checks it
    // lived IDLE_STREAM_MS.
    const idle = { openedAt: 0, lastByteAt: 0, bytes: 0, error: undefined as unknown }
    const idleStream = new AbortController()
    beforeAll(async () => {
      server = await start()
      const res = await fetch(`${server.base}/__tasks/events`, { headers: AUTH, signal: idleStream.signal })
      expect(res.status).toBe(200)
      idle.openedAt = idle.lastByteAt = Date.now()
      const reader = res.body!.getReader()
      void (async () => {
        for (let read = await reader.read(); !read.done; read = await reader.read()) {
          idle.bytes += read.value.byteLength
          idle.lastByteAt = Date.now()
        }
        throw new Error('the server ended the stream')
      })().catch((error: unknown) => {
        if (!idleStream.signal.aborted) idle.error = error
      })
    })
    afterAll(async () => {
      idleStream.abort()
      for (const each of servers) await stop(each)
    })

    // As the node target's server does: see test/targets/node.test.ts.
    it('listens on every interface without HOST, binds the one HOST names, and logs the address it bound', async () => {
      expect((await start({ HOST: undefined })).output()).toMatch(/svc listening on http:\/\/0\.0\.0\.0:\d+\n/)
      const local = await start({ HOST: 'localhost' })
      const logged = local.output().match(/svc listening on (http:\/\/\S+)\n/)![1]
      expect(logged).toMatch(/^http:\/\/(127\.0\.0\.1|\[::1\]):\d+$/)
      expect(await (await fetch(`${logged}/__health`)).json()).toMatchObject({ ok: true })
    })

    it('serves the files of public/', async () => {
      const res = await fetch(`${server.base}/hello.txt`)
      expect(res.status).toBe(200)
      expect(res.headers.get('content-type')).toMatch(/^text\/plain/)
      expect(await res.text()).toBe('served from public/\n')
      expect((await fetch(`${server.base}/hello.txt`, { headers: { 'if-none-match': res.headers.get('etag')! } })).status).toBe(304)
    })

    it('echoes text frames as text and binary frames as binary on a hot route', async () => {
      const socket = await ws('/api/live')
      socket.send('text')
      expect(await nextMessage(socket)).toEqual({ data: 'text', binary: false })
      socket.send(Buffer.from([1, 2, 3]))
      expect(await nextMessage(socket)).toEqual({ data: Buffer.from([1, 2, 3]), binary: true })
      socket.close()
    })

    it("opens a hot route's socket to an origin on its list and to a client that sends none, and refuses others with 403", async () => {
      ;(await ws('/api/live', 'https://allowed.example')).close()
      ;(await ws('/api/live')).close()
      await expect(ws('/api/live', 'https://evil.example')).rejects.toThrow('handshake answered 403')
    })

    it("hands the route's close listeners the code and reason the client closed with", async () => {
      const socket = await ws('/api/live')
      socket.close(4000, 'bye')
      await closed(socket)
      await until(async () => (await closes()).some(([code, reason]) => code === 4000 && reason === 'bye'), 5000)
    })

    it("hands the route's close listeners 1006 for a client gone without a closing handshake, and logs no error", async () => {
      const socket = await ws('/api/live')
      const before = (await closes()).length
      socket.terminate()
      await until(async () => (await closes()).length > before, 5000)
      expect((await closes()).at(-1)).toEqual([1006, ''])
      expect(server.output()).not.toMatch(/WebSocket error/)
    })

    it('closes the connection with 1009 on a message over websocket.maxMessageBytes, and tells the route', async () => {
      const socket = await ws('/api/live')
      const ended = closed(socket)
      socket.send('x'.repeat(1024 * 1024 + 1))
      expect((await ended).code).toBe(1009)
      await until(async () => (await closes()).some(([code]) => code === 1009), 5000)
      expect(server.output()).toMatch(/a message over websocket\.maxMessageBytes \(1048576\) closed the connection with 1009/)
    })

    it('answers a body over the limit with 413 PAYLOAD_TOO_LARGE as JSON', async () => {
      const res = await fetch(`${server.base}/__tasks/jobs.work`, {
        method: 'POST',
        headers: { ...AUTH, 'content-type': 'application/json' },
        body: JSON.stringify({ pad: 'x'.repeat(1024 * 1024 + 1) }),
      })
      expect(res.status).toBe(413)
      expect(await res.json()).toMatchObject({ code: 'PAYLOAD_TOO_LARGE' })
    })

    it('keeps runs in .svc/runs.db under its working directory without SVC_STORE_URL, and logs where', async () => {
      const db = join(dirname(await webServerFile()), '.svc/runs.db')
      expect(server.output()).toContain(`svc runs: SQLite ${db}`)
      expect((await stat(db)).isFile()).toBe(true)
    })

    it('serves the dashboard as the Node server does: to everyone with SVC_DASHBOARD=1, to loopback peers in development, else not', async () => {
      const page = async (base: string) => fetch(`${base}/__svc/dashboard`)
      expect((await page(server.base)).status).toBe(404)
      for (const env of [{ SVC_DASHBOARD: '1' }, { NODE_ENV: 'development' }]) {
        const res = await page((await start(env)).base)
        expect(res.status).toBe(200)
        expect(res.headers.get('content-type')).toMatch(/^text\/html/)
      }
    })

    it(
      `keeps an idle event stream open ${IDLE_STREAM_MS / 1000} s, past the runtime's idle timeout (Bun's is 10 s), with heartbeats`,
      async () => {
        const left = idle.openedAt + IDLE_STREAM_MS - Date.now()
        if (left > 0) await new Promise((resolve) => setTimeout(resolve, left))
        expect(idle.error).toBeUndefined()
        expect(idle.bytes).toBeGreaterThan(0)
        expect(Date.now() - idle.lastByteAt).toBeLessThan(SSE_HEARTBEAT_MS + 2000)
      },
      IDLE_STREAM_MS + 10_000,
    )

    // Last: it ends the server.
    it('drains on SIGTERM: a request in flight is answered, sockets get 1001, then the process ends with that signal', async () => {
      const socket = await ws('/api/live')
      const socketClosed = closed(socket)
      const inFlight = fetch(`${server.base}/api/slow?ms=600`)
      await new Promise((resolve) => setTimeout(resolve, 150))
      const ended = stop(server, 'SIGTERM')
      expect((await socketClosed).code).toBe(1001)
      const res = await inFlight
      expect(res.status).toBe(200)
      expect(await res.json()).toEqual({ slept: 600 })
      expect(await ended).toBe('SIGTERM')
      expect(server.output()).toMatch(/SIGTERM: draining/)
      await expect(fetch(`${server.base}/api/hello`)).rejects.toThrow()
    })
  })

  describe(`servers started from code on ${runtime}`, () => {
    const name = runtime === 'bun' ? 'Bun' : 'Deno'
    let result: { hello: unknown; echo: unknown; refused?: string }

    beforeAll(async () => {
      const { code, output } = await runScript(runtime, fileURLToPath(new URL('../fixtures/runtime-api/main.ts', import.meta.url)))
      expect(code, output).toBe(0)
      result = JSON.parse(output.trim().split('\n').at(-1)!)
    })

    it(`start${name}Server() from svc/${runtime} serves routes and hot routes, and closes`, () => {
      expect(result).toMatchObject({ hello: { hello: runtime }, echo: 'ping' })
    })

    it(`startSvcServer() refuses to start, naming svc build --target ${runtime}`, () => {
      expect(result.refused).toContain(`runs on Node only (this is ${name} `)
      expect(result.refused).toContain(`svc build --target ${runtime}`)
    })
  })

  describe(`runs on ${runtime} across a kill -9`, () => {
    let dir: string
    beforeAll(async () => {
      dir = await mkdtemp(join(tmpdir(), `svc-${runtime}-restart-`))
    })
    afterAll(() => rm(dir, { recursive: true, force: true }))

    const trigger = async (server: BuiltServer, task: string) => {
      const res = await fetch(`${server.base}/__tasks/${task}`, {
        method: 'POST',
        headers: { ...AUTH, 'content-type': 'application/json' },
        body: '{}',
      })
      expect(res.status).toBe(202)
      return ((await res.json()) as { id: string }).id
    }
    const getRun = async (server: BuiltServer, id: string) =>
      (await (await fetch(`${server.base}/__tasks/${id}`, { headers: AUTH })).json()) as RunRecord

    it('loses no run and runs no recorded step again: steps cut off run again on the next process, sleeps end there', async () => {
      const effects = join(dir, 'effects.log')
      await writeFile(effects, '')
      const lines = async () => (await readFile(effects, 'utf8')).split('\n').filter(Boolean)
      const file = await webServerFile()
      const env = { SVC_TASK_SECRET: TASK_SECRET, EFFECTS_LOG: effects }

      const first = await startBuilt(runtime, file, { ...env, HOLD_STEP_B: '1' }, { cwd: dir })
      const work = [await trigger(first, 'jobs.work'), await trigger(first, 'jobs.work'), await trigger(first, 'jobs.work')]
      const nap = await trigger(first, 'jobs.nap')
      // Every work run is inside step b, which never ends; the nap run sleeps.
      await until(async () => (await lines()).filter((line) => line.startsWith('b ')).length === work.length, 15_000)
      await until(async () => (await getRun(first, nap)).status === 'suspended', 15_000)
      for (const id of work) expect((await getRun(first, id)).status).toBe('running')
      expect(await stop(first)).toBe('SIGKILL')
      expect(existsSync(join(dir, '.svc/runs.db'))).toBe(true)

      const second = await startBuilt(runtime, file, env, { cwd: dir })
      try {
        const get = (id: string) => getRun(second, id)
        for (const id of work) {
          const done = await pollRun((runId) => fetch(`${second.base}/__tasks/${runId}`, { headers: AUTH }), id, 15_000)
          expect(done, JSON.stringify(done)).toMatchObject({
            status: 'completed',
            result: { a: 'A', b: 'B', finishedBy: second.child.pid },
          })
          // The attempt the kill cut off left no record; the one that finished did.
          expect(done.attempts.map((attempt: { index: number; error?: string }) => [attempt.index, attempt.error])).toEqual([
            [1, undefined],
          ])
        }
        // Suspended until its sleep ends, on the second process.
        const napped = await until(async () => {
          const run = await get(nap)
          return run.status === 'completed' && run
        }, 15_000)
        expect(napped).toMatchObject({ status: 'completed', result: { a: 'A', finishedBy: second.child.pid } })
        expect((await get(nap)).steps).toMatchObject({ a: { status: 'completed' }, nap: { status: 'completed' } })

        // Step a was recorded before the kill: it ran once, in the first
        // process. Step b was not: it ran again, once, in the second.
        const ran = await lines()
        for (const id of work) {
          expect(ran.filter((line) => line.startsWith(`a ${id} `))).toEqual([`a ${id} ${first.child.pid}`])
          expect(ran.filter((line) => line.startsWith(`b ${id} `))).toEqual([`b ${id} ${first.child.pid}`, `b ${id} ${second.child.pid}`])
        }
        expect(ran.filter((line) => line.startsWith('nap-a '))).toEqual([`nap-a ${nap} ${first.child.pid}`])
        const listed = (await (await fetch(`${second.base}/__tasks/runs`, { headers: AUTH })).json()) as { runs: Array<{ id: string }> }
        expect(listed.runs.map((run) => run.id).sort()).toEqual([...work, nap].sort())
      } finally {
        await stop(second)
      }
    })
  })
}
