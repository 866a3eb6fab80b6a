import { spawn } from 'node:child_process'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildApp } from '../../src/build/build.ts'
import { copyFixtureApp } from './_app.ts'

describe('svc build --target node for an app without public/', () => {
  let app: Awaited<ReturnType<typeof copyFixtureApp>>
  beforeAll(async () => {
    // The targets fixture has no public/ folder.
    app = await copyFixtureApp()
    await buildApp({ root: app.root, target: 'node' })
  })
  afterAll(() => app?.cleanup())

  it('starts without warning about a static directory it never had', async () => {
    const child = spawn(process.execPath, [join(app.root, '.output/node/server.mjs')], {
      env: { ...process.env, PORT: '0', HOST: '127.0.0.1', NODE_ENV: 'production' },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let output = ''
    try {
      const base = await new Promise<string>((resolve, reject) => {
        const onData = (chunk: Buffer) => {
          output += chunk
          const match = output.match(/listening on (http:\/\/\S+)/)
          if (match) resolve(match[1])
        }
        child.stdout.on('data', onData)
        child.stderr.on('data', onData)
        child.once('exit', (code) => reject(new Error(`server exited with ${code}:\n${output}`)))
      })
      expect(await (await fetch(`${base}/api/hello`)).json()).toEqual({ hello: 'world' })
      expect((await fetch(`${base}/missing.txt`)).status).toBe(404)
      expect(output).not.toMatch(/staticDirs/)
    } finally {
      child.kill('SIGKILL')
    }
  })

  it('does not reference a public directory in server.mjs', async () => {
    const code = await readFile(join(app.root, '.output/node/server.mjs'), 'utf8')
    expect(code.includes('./public')).toBe(false)
  })
})
