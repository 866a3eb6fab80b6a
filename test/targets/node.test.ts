import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { readFile, stat, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildApp } from '../../src/build/build.ts'
import { copyFixtureApp, pollRun } from './_app.ts'

/** Starts the built server on an ephemeral port and resolves with its base URL. */
function startBuilt(file: string, env: Record<string, string | undefined>): Promise<{ child: ChildProcess; base: string; output: () => string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [file], { env: { ...process.env, PORT: '0', HOST: '127.0.0.1', ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
    let output = ''
    const onData = (chunk: Buffer) => {
      output += chunk
      const match = output.match(/listening on (http:\/\/\S+)/)
      if (match) resolve({ child, base: match[1].replace('0.0.0.0', '127.0.0.1'), output: () => output })
    }
    child.stdout!.on('data', onData)
    child.stderr!.on('data', (chunk) => (output += chunk))
    child.on('exit', (code) => reject(new Error(`server exited with ${code}:\n${output}`)))
  })
}

describe('svc build --target node', () => {
  let app: Awaited<ReturnType<typeof copyFixtureApp>>
  let server: Awaited<ReturnType<typeof startBuilt>>

  beforeAll(async () => {
    app = await copyFixtureApp()
    const build = await buildApp({ root: app.root, target: 'node' })
    expect(build.warnings).toEqual([])
    server = await startBuilt(join(app.root, '.output/node/server.mjs'), { NODE_ENV: 'production', THEN_TASK_SECRET: 'node-secret' })
  })
  afterAll(async () => {
    server?.child.kill('SIGKILL')
    await app?.cleanup()
  })

  it('writes server.mjs, a package.json and a Dockerfile', async () => {
    const pkg = JSON.parse(await readFile(join(app.root, '.output/node/package.json'), 'utf8'))
    expect(pkg).toMatchObject({ type: 'module', main: 'server.mjs', dependencies: {} })
    expect(await readFile(join(app.root, '.output/node/Dockerfile'), 'utf8')).toMatch(/CMD \["node", "server\.mjs"\]/)
  })

  it('serves routes and pages', async () => {
    expect(await (await fetch(`${server.base}/api/hello?name=node`)).json()).toEqual({ hello: 'node' })
    const page = await fetch(`${server.base}/`)
    expect(await page.text()).toContain('<h1>targets app</h1>')
  })

  it('serves the hot route over WebSocket', async () => {
    const ws = new WebSocket(`${server.base.replace('http', 'ws')}/api/live`)
    const echoed = await new Promise<string>((resolve, reject) => {
      ws.onopen = () => ws.send('ping')
      ws.onmessage = (event) => resolve(String(event.data))
      ws.onerror = () => reject(new Error('WebSocket failed'))
    })
    ws.close()
    expect(echoed).toBe('ping')
  })

  it('runs tasks in the server process', async () => {
    const auth = { authorization: 'Bearer node-secret' }
    const res = await fetch(`${server.base}/__tasks/jobs.double`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: '{"n":1}' })
    expect(res.status).toBe(202)
    const { id } = (await res.json()) as { id: string }
    expect(await pollRun((runId) => fetch(`${server.base}/__tasks/${runId}`, { headers: auth }), id)).toMatchObject({ result: { doubled: 2 } })
  })

  it('drains on SIGTERM, then ends with that signal', async () => {
    const exited = new Promise<NodeJS.Signals | null>((resolve) => server.child.once('exit', (_code, signal) => resolve(signal)))
    server.child.kill('SIGTERM')
    expect(await exited).toBe('SIGTERM')
    expect(server.output()).toMatch(/SIGTERM: draining/)
  })
})

describe('the server built for the node target, as a deployment artifact', () => {
  let app: Awaited<ReturnType<typeof copyFixtureApp>>
  const children: ChildProcess[] = []
  const start = async (env: Record<string, string | undefined>) => {
    const server = await startBuilt(join(app.root, '.output/node/server.mjs'), env)
    children.push(server.child)
    return server
  }
  const dockerfile = () => readFile(join(app.root, '.output/node/Dockerfile'), 'utf8')

  beforeAll(async () => {
    app = await copyFixtureApp()
    await buildApp({ root: app.root, target: 'node' })
  })
  afterAll(async () => {
    for (const child of children) child.kill('SIGKILL')
    await app?.cleanup()
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
    server.child.kill('SIGKILL')
    await new Promise((resolve) => server.child.once('exit', resolve))
    const down = spawnSync(process.execPath, command.slice(1), { env: { ...process.env, PORT: port }, encoding: 'utf8' })
    expect(down.status).toBe(1)
  })
})

describe('the Dockerfile of the node target and the app\'s dependencies', () => {
  let app: Awaited<ReturnType<typeof copyFixtureApp>>
  const out = () => join(app.root, '.output/node')
  const pkg = { name: 'locked-app', version: '1.0.0', dependencies: { ms: '^2.1.3', svc: '^0.1.0' }, devDependencies: { 'left-pad': '^1.3.0' } }
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
