import { spawn, spawnSync } from 'node:child_process'
import { cp, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildApp } from '../../src/build/build.ts'
import { builtOnce, copyFixtureApp } from './_app.ts'
import { TASK_SECRET, targetContract } from './contract.ts'
import { type BuiltServer, builtServerCases, contractTarget, stop } from './_server-runtime.ts'
import { hostileClientCases } from './_hostile.ts'

const cronPreload = new URL('./_node-cron.mjs', import.meta.url).href

/**
 * Starts a built server.mjs as its own process on an ephemeral port and
 * resolves once it logs the address it listens on. With `cronOnDemand`, the
 * server is preloaded with a module that fires a cron schedule when asked
 * over IPC, through runScheduledTasks.
 */
function startBuilt(file: string, env: Record<string, string | undefined>, options: { cronOnDemand?: boolean } = {}): Promise<BuiltServer> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...(options.cronOnDemand ? ['--import', cronPreload] : []), file], {
      env: { ...process.env, PORT: '0', HOST: '127.0.0.1', ...env },
      // Runs are kept in .svc/runs.db under the working directory: one per build.
      cwd: dirname(file),
      stdio: ['ignore', 'pipe', 'pipe', ...(options.cronOnDemand ? (['ipc'] as const) : [])],
    })
    let output = ''
    let asked = 0
    const fireCron: BuiltServer['fireCron'] = (cron) =>
      new Promise((resolveFire, rejectFire) => {
        const id = ++asked
        const onMessage = (message: { id: number; runs?: Array<{ id: string; taskName: string; status: string }>; error?: string }) => {
          if (message.id !== id) return
          child.off('message', onMessage)
          if (message.error) rejectFire(new Error(message.error))
          else resolveFire(message.runs!)
        }
        child.on('message', onMessage)
        child.send({ id, cron })
      })
    child.stdout!.on('data', (chunk) => {
      output += chunk
      const match = output.match(/listening on (http:\/\/\S+)/)
      if (match) resolve({ child, base: match[1].replace('0.0.0.0', '127.0.0.1'), output: () => output, fireCron })
    })
    child.stderr!.on('data', (chunk) => (output += chunk))
    child.on('exit', (code) => reject(new Error(`server exited with ${code}:\n${output}`)))
  })
}

const built = builtOnce('node')
const serverFile = async () => join((await built()).root, '.output/node/server.mjs')

targetContract({
  name: 'node',
  async start() {
    // The in-process scheduler is off, as for an app whose cron is fired
    // from outside, so that no tick of its own lands in the middle of a case:
    // the driver fires each schedule through runScheduledTasks instead.
    const server = await startBuilt(
      await serverFile(),
      { NODE_ENV: 'production', SVC_TASK_SECRET: TASK_SECRET, SVC_DISABLE_IN_PROCESS_CRON: '1' },
      { cronOnDemand: true },
    )
    return contractTarget(server)
  },
})

describe('svc build --target node', () => {
  let server: BuiltServer

  beforeAll(async () => {
    server = await startBuilt(await serverFile(), { NODE_ENV: 'production', SVC_TASK_SECRET: TASK_SECRET })
  })
  afterAll(() => stop(server))

  builtServerCases('node', built, () => server)
  hostileClientCases('node', () => server)

  // Last: it ends the server.
  it('drains on SIGTERM, then ends with that signal', async () => {
    const exited = new Promise<NodeJS.Signals | null>((resolve) => server.child.once('exit', (_code, signal) => resolve(signal)))
    server.child.kill('SIGTERM')
    expect(await exited).toBe('SIGTERM')
    expect(server.output()).toMatch(/SIGTERM: draining/)
  })
})

describe('the server built for the node target, as a deployment artifact', () => {
  const servers: BuiltServer[] = []
  const start = async (env: Record<string, string | undefined>) => {
    const server = await startBuilt(await serverFile(), env)
    servers.push(server)
    return server
  }
  const dockerfile = async () => readFile(join((await built()).root, '.output/node/Dockerfile'), 'utf8')

  afterAll(async () => {
    for (const server of servers) await stop(server)
  })

  // A container or VM reaches the server through a non-loopback interface, so
  // a server that binds 127.0.0.1 is unreachable there (Nitro and Next bind all
  // interfaces too). No other interface can be reached from this test, so the
  // bound address is read from the log line, which reports server.address().
  it('listens on every interface without HOST, whatever NODE_ENV says, and logs that address', async () => {
    for (const NODE_ENV of [undefined, 'test']) {
      const server = await start({ HOST: undefined, NODE_ENV })
      expect(server.output()).toMatch(/svc listening on http:\/\/0\.0\.0\.0:\d+\n/)
      expect(await (await fetch(`${server.base}/__health`)).json()).toMatchObject({ ok: true })
    }
  })

  it('binds the interface HOST names, and logs the address it resolved to', async () => {
    const server = await start({ HOST: 'localhost', NODE_ENV: undefined })
    const logged = server.output().match(/svc listening on (http:\/\/\S+)\n/)![1]
    expect(logged).toMatch(/^http:\/\/(127\.0\.0\.1|\[::1\]):\d+$/)
    expect(await (await fetch(`${logged}/__health`)).json()).toMatchObject({ ok: true })
  })

  it('keeps runs in .svc/runs.db under its working directory without SVC_STORE_URL, and logs where', async () => {
    const server = await start({ SVC_STORE_URL: undefined })
    const db = join(dirname(await serverFile()), '.svc/runs.db')
    expect(server.output()).toContain(`svc runs: SQLite ${db}`)
    expect((await stat(db)).isFile()).toBe(true)
  })

  it('writes a Dockerfile that leaves .svc/ writable by the node user', async () => {
    const lines = (await dockerfile()).split('\n')
    const chown = lines.findIndex((line) => /mkdir -p \.svc && chown node:node \.svc/.test(line))
    expect(chown).toBeGreaterThan(-1)
    expect(chown).toBeLessThan(lines.indexOf('USER node'))
  })

  // Docker cannot run here: the Dockerfile is read as text, and its health
  // check command is run as it would run inside the container.
  it('writes a Dockerfile that runs as the unprivileged node user', async () => {
    const lines = (await dockerfile()).split('\n')
    expect(lines).toContain('USER node')
    expect(lines.indexOf('USER node')).toBeLessThan(lines.findIndex((line) => line.startsWith('CMD ')))
  })

  it('writes a Dockerfile whose HEALTHCHECK asks /__health with node, the image having no curl', async () => {
    const line = (await dockerfile()).split('\n').find((l) => l.startsWith('HEALTHCHECK '))!
    expect(line).toMatch(/ CMD \["node",\s*"-e",/)
    const command = JSON.parse(line.slice(line.indexOf(' CMD ') + 5)) as string[]
    expect(command[2]).toContain('/__health')
    const server = await start({ HOST: '127.0.0.1', NODE_ENV: 'production' })
    const port = new URL(server.base).port
    const healthy = spawnSync(process.execPath, command.slice(1), { env: { ...process.env, PORT: port }, encoding: 'utf8' })
    expect(healthy.status, healthy.stderr).toBe(0)
    await stop(server)
    const down = spawnSync(process.execPath, command.slice(1), { env: { ...process.env, PORT: port }, encoding: 'utf8' })
    expect(down.status).toBe(1)
  })
})

describe("the Dockerfile of the node target and the app's dependencies", () => {
  let app: Awaited<ReturnType<typeof copyFixtureApp>>
  const out = () => join(app.root, '.output/node')
  const pkg = {
    name: 'locked-app',
    version: '1.0.0',
    dependencies: { ms: '^2.1.3', svcjs: '^0.1.0' },
    devDependencies: { 'left-pad': '^1.3.0' },
  }
  const lock = {
    name: 'locked-app',
    version: '1.0.0',
    lockfileVersion: 3,
    requires: true,
    packages: {
      '': { name: 'locked-app', version: '1.0.0', dependencies: pkg.dependencies, devDependencies: pkg.devDependencies },
      'node_modules/left-pad': {
        version: '1.3.0',
        resolved: 'https://registry.npmjs.org/left-pad/-/left-pad-1.3.0.tgz',
        integrity: 'sha512-XI5MPzVNApjAyhQzphX8BkmKsKUxD4LdyK24iZeQEgxWxhRKgRvyWHDs2KUnTVyR+v+OIOLNX8TJEXMDqiL1ZYw==',
        dev: true,
      },
      // As an app's lock file holds svcjs: the built output bundles it, and its install must not fetch it.
      'node_modules/svcjs': {
        version: '0.1.0',
        resolved: 'https://registry.npmjs.org/svcjs/-/svcjs-0.1.0.tgz',
        integrity: 'sha512-AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA==',
      },
      'node_modules/ms': {
        version: '2.1.3',
        resolved: 'https://registry.npmjs.org/ms/-/ms-2.1.3.tgz',
        integrity: 'sha512-6FlzubTLZG3J2a/NVCAleEhjzq5oxgHyaCU9yYXvcLsvoVaHJq/s5xXI6/XXP6tz7R9xAOtHnSO/tXtF3WRTlA==',
      },
    },
  }

  beforeAll(async () => {
    app = await copyFixtureApp()
    await writeFile(join(app.root, 'package.json'), JSON.stringify(pkg, null, 2))
  })
  afterAll(() => app?.cleanup())

  it('installs with npm install when the app has no lock file', async () => {
    await buildApp({ root: app.root, target: 'node' })
    const lines = (await readFile(join(out(), 'Dockerfile'), 'utf8')).split('\n')
    expect(lines).toContain('COPY package.json ./')
    expect(lines).toContain('RUN npm install --omit=dev --no-audit --no-fund')
    expect(await stat(join(out(), 'package-lock.json')).catch(() => null)).toBeNull()
  })

  it('installs exactly what the lock file pins with npm ci, copying the lock file', async () => {
    await writeFile(join(app.root, 'package-lock.json'), JSON.stringify(lock, null, 2))
    await buildApp({ root: app.root, target: 'node' })
    const lines = (await readFile(join(out(), 'Dockerfile'), 'utf8')).split('\n')
    expect(lines).toContain('COPY package.json package-lock.json ./')
    expect(lines).toContain('RUN npm ci --omit=dev --no-audit --no-fund')
    expect(await readFile(join(out(), 'package-lock.json'), 'utf8')).toBe(await readFile(join(app.root, 'package-lock.json'), 'utf8'))
    // npm ci refuses a package.json that disagrees with the lock file; the
    // output's package.json keeps fewer dependencies (svc is bundled), which it
    // must still accept. A dry run checks that offline, without installing.
    const ci = spawnSync('npm', ['ci', '--omit=dev', '--dry-run', '--offline', '--no-audit', '--no-fund'], { cwd: out(), encoding: 'utf8' })
    expect(ci.status, ci.stderr).toBe(0)
    expect(ci.stdout).toMatch(/add ms 2\.1\.3/)
  })
})

describe('svc build --target node, an app with public/ in a directory whose path is not plain ASCII', () => {
  let root: string
  let server: BuiltServer | undefined

  beforeAll(async () => {
    // A space and an accented letter: both are percent-encoded in a file URL's pathname.
    root = join(await mkdtemp(join(tmpdir(), 'svc-targets-')), 'my app é')
    await cp(fileURLToPath(new URL('../fixtures/static-files-app', import.meta.url)), root, { recursive: true })
    await buildApp({ root, target: 'node' })
    server = await startBuilt(join(root, '.output/node/server.mjs'), { NODE_ENV: 'production' })
  })
  afterAll(async () => {
    await stop(server)
    await rm(join(root, '..'), { recursive: true, force: true })
  })

  it('serves the copied public/ files', async () => {
    const res = await fetch(`${server!.base}/hello.txt`)
    expect(res.status).toBe(200)
    expect(await res.text()).toBe('served from public/\n')
    expect(server!.output()).not.toContain('is not a directory')
  })

  it('serves the routes', async () => {
    expect(await (await fetch(`${server!.base}/api/hello`)).json()).toEqual({ hello: 'static app' })
  })
})
