// A built server that cannot start says why in a few lines: svc's message,
// the messages of its causes, and at most a few named stack frames, never a
// line of the minified bundle, and it exits with code 1.
import { spawn } from 'node:child_process'
import { createServer, type Server } from 'node:net'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildApp } from '../../src/build/build.ts'
import { MIN_NODE_VERSION } from '../../src/runtime/node-version.ts'
import { olderNode } from '../package/_packed.ts'
import { runtimeBinary, type ServerRuntime } from '../targets/_server-runtime.ts'
import { writeApp } from '../targets/_app.ts'

const APP = {
  'src/api/hello.ts': 'export function GET() { return { hello: "world" } }\n',
  // A route whose module fails as it loads, when asked to: an app's own start-up error.
  'src/api/fragile.ts':
    'if (process.env.FAIL_ON_LOAD) throw new Error("fragile.ts could not load its settings")\nexport function GET() { return "ok" }\n',
  // A task, so that the server opens the run store SVC_STORE_URL names.
  'src/api/jobs/report.ts': "export const route = { kind: 'task' }\nexport async function POST() { return 'done' }\n",
}

let root: string
let cleanup: () => Promise<void>
let busy: Server
let busyPort: number

beforeAll(async () => {
  ;({ root, cleanup } = await writeApp(APP))
  for (const target of ['node', 'bun', 'deno'] as const) await buildApp({ root, target })
  busy = createServer()
  await new Promise<void>((resolve) => busy.listen(0, '127.0.0.1', resolve))
  busyPort = (busy.address() as { port: number }).port
}, 60_000)

afterAll(async () => {
  await new Promise((resolve) => busy?.close(resolve))
  await cleanup?.()
})

interface Failure {
  code: number | null
  stderr: string
}

/** Starts `.output/<target>/server.mjs` as its package.json's start script does, and resolves once the process ended. */
function start(target: 'node' | ServerRuntime, env: Record<string, string>, binary?: string): Promise<Failure> {
  const args =
    target === 'deno'
      ? ['run', '--allow-net', '--allow-env', '--allow-read', '--allow-write', '--allow-sys=hostname', 'server.mjs']
      : ['server.mjs']
  const command = binary ?? (target === 'node' ? process.execPath : runtimeBinary(target))
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      cwd: join(root, `.output/${target}`),
      env: { ...process.env, PORT: '0', HOST: '127.0.0.1', NO_COLOR: '1', SVC_STORE_URL: 'memory', ...env },
      stdio: ['ignore', 'ignore', 'pipe'],
    })
    let stderr = ''
    const timer = setTimeout(() => child.kill('SIGKILL'), 15_000)
    child.stderr.on('data', (chunk) => (stderr += chunk))
    child.on('error', reject)
    child.on('close', (code) => {
      clearTimeout(timer)
      resolve({ code, stderr })
    })
  })
}

/** Exit code 1, and stderr that is short, holds `message`, and has no line of code in it. */
function expectShortFailure(failure: Failure, message: string | RegExp): void {
  expect(failure.code).toBe(1)
  expect(failure.stderr).toMatch(message)
  expect(Buffer.byteLength(failure.stderr)).toBeLessThan(2048)
  for (const line of failure.stderr.split('\n')) expect(line.length).toBeLessThanOrEqual(300)
  // Only "at name (place)" frames follow the messages.
  for (const line of failure.stderr.split('\n').filter((text) => /^\s+at /.test(text))) {
    expect(line).toMatch(/^ {4}at (?:async )?\S+ \(.+\)$/)
  }
}

const WEAK_SECRET = { NODE_ENV: 'production', SVC_TASK_SECRET: 'change-me' }

describe('a built node server that cannot start', () => {
  it('prints the weak-secret message and exits 1', async () => {
    expectShortFailure(await start('node', WEAK_SECRET), /SVC_TASK_SECRET must be at least 32 bytes.*openssl rand -hex 32/)
  })

  it('prints the message of a bad SVC_STORE_URL and exits 1', async () => {
    expectShortFailure(await start('node', { SVC_STORE_URL: 'bogus://x' }), /SVC_STORE_URL must be one of .*\(got "bogus:\/\/x"\)/)
  })

  it('prints the message of a Postgres that is down, with its cause, and exits 1', async () => {
    const failure = await start('node', { SVC_STORE_URL: 'postgres://u:p@127.0.0.1:1/db' })
    expectShortFailure(failure, /the Postgres run store cannot start: .*ECONNREFUSED.*Check that the database is up/)
    // The password stays out of the output.
    expect(failure.stderr).not.toContain('u:p@')
  })

  it('names the port in use and PORT as the fix', async () => {
    const failure = await start('node', { PORT: String(busyPort) })
    expectShortFailure(failure, `port ${busyPort} is already in use on 127.0.0.1`)
    expect(failure.stderr).toContain('set PORT to another port')
  })

  it("prints the error of an app's module that fails as it loads", async () => {
    expectShortFailure(await start('node', { FAIL_ON_LOAD: '1' }), 'fragile.ts could not load its settings')
  })

  const old = olderNode()
  it.skipIf(!old)(`prints the Node version svc needs on an older Node (${old?.version ?? 'none on this machine'})`, async () => {
    const needs = MIN_NODE_VERSION.replace(/\.0$/, '').replaceAll('.', '\\.')
    expectShortFailure(await start('node', {}, old!.path), new RegExp(`svc needs Node\\.js ${needs} or later \\(this is Node v\\d+`))
  })

  it('starts as before when nothing is wrong', async () => {
    const child = spawn(process.execPath, ['server.mjs'], {
      cwd: join(root, '.output/node'),
      env: { ...process.env, PORT: '0', HOST: '127.0.0.1', SVC_STORE_URL: 'memory' },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    try {
      const base = await new Promise<string>((resolve, reject) => {
        let output = ''
        child.stdout.on('data', (chunk) => {
          output += chunk
          const match = output.match(/listening on (http:\/\/\S+)/)
          if (match) resolve(match[1])
        })
        child.on('exit', (code) => reject(new Error(`server exited with ${code}: ${output}`)))
      })
      expect(await (await fetch(`${base}/api/hello`)).json()).toEqual({ hello: 'world' })
    } finally {
      child.kill('SIGTERM')
    }
  })
})

describe.each(['bun', 'deno'] as const)('a built %s server that cannot start', (target) => {
  it('prints the weak-secret message and exits 1', async () => {
    expectShortFailure(await start(target, WEAK_SECRET), /SVC_TASK_SECRET must be at least 32 bytes/)
  })

  it('prints the message of a bad SVC_STORE_URL and exits 1', async () => {
    expectShortFailure(await start(target, { SVC_STORE_URL: 'bogus://x' }), /SVC_STORE_URL must be one of/)
  })

  it('names the port in use and PORT as the fix', async () => {
    const failure = await start(target, { PORT: String(busyPort) })
    expectShortFailure(failure, `port ${busyPort} is already in use on 127.0.0.1`)
    expect(failure.stderr).toContain('set PORT to another port')
  })
})
