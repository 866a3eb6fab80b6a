import { spawn, type ChildProcess } from 'node:child_process'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildApp } from '../../src/build/build.ts'
import { copyFixtureApp, pollRun } from './_app.ts'

/** Starts the built server on an ephemeral port and resolves with its base URL. */
function startBuilt(file: string, env: Record<string, string>): Promise<{ child: ChildProcess; base: string; output: () => string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [file], { env: { ...process.env, PORT: '0', HOST: '127.0.0.1', ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
    let output = ''
    const onData = (chunk: Buffer) => {
      output += chunk
      const match = output.match(/listening on (http:\/\/\S+)/)
      if (match) resolve({ child, base: match[1].replace('localhost', '127.0.0.1'), output: () => output })
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
