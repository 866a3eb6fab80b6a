import { spawn, type ChildProcess } from 'node:child_process'
import { cp, mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildApp } from '../../src/build/build.ts'

const fixture = fileURLToPath(new URL('../fixtures/static-files-app', import.meta.url))

describe('svc build --target node, in a directory whose path is not plain ASCII', () => {
  let root: string
  let child: ChildProcess | undefined
  let base: string
  let output = ''

  beforeAll(async () => {
    // A space and an accented letter: both are percent-encoded in a file URL's pathname.
    root = join(await mkdtemp(join(tmpdir(), 'svc-targets-')), 'my app é')
    await cp(fixture, root, { recursive: true })
    await buildApp({ root, target: 'node' })
    child = spawn(process.execPath, [join(root, '.output/node/server.mjs')], {
      env: { ...process.env, PORT: '0', HOST: '127.0.0.1', NODE_ENV: 'production' },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    base = await new Promise<string>((resolve, reject) => {
      const onData = (chunk: Buffer) => {
        output += chunk
        const match = output.match(/listening on (http:\/\/\S+)/)
        if (match) resolve(match[1])
      }
      child!.stdout!.on('data', onData)
      child!.stderr!.on('data', (chunk) => (output += chunk))
      child!.once('exit', (code) => reject(new Error(`server exited with ${code}:\n${output}`)))
    })
  })
  afterAll(async () => {
    child?.kill('SIGKILL')
    await rm(join(root, '..'), { recursive: true, force: true })
  })

  it('serves the copied public/ files', async () => {
    const res = await fetch(`${base}/hello.txt`)
    expect(res.status).toBe(200)
    expect(await res.text()).toBe('served from public/\n')
    expect(output).not.toContain('is not a directory')
  })

  it('serves the routes', async () => {
    expect(await (await fetch(`${base}/api/hello`)).json()).toEqual({ hello: 'static app' })
  })
})
