import { spawn } from 'node:child_process'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import WebSocket from 'ws'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { startDevServer, type DevServer } from '../../src/dev/server.ts'
import { eventually, recordingLogger, write } from './_helpers.ts'

const cli = fileURLToPath(new URL('../../src/cli/main.ts', import.meta.url))

describe('svc dev', () => {
  let root: string
  let dev: DevServer | undefined

  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'svc-dev-'))
    await write(root, 'src/api/hello.ts', `export function GET() { return { version: 1 } }\n`)
    await write(root, 'src/api/counter.ts', `let count = 0\nexport function GET() { count++; return { count } }\n`)
    await write(
      root,
      'src/api/echo.ts',
      `export const route = { kind: 'hot' } as const\nexport function websocket(peer: any) { peer.on('message', (m: unknown) => peer.send('v1:' + m)) }\n`,
    )
  })
  afterEach(async () => {
    await dev?.close()
    dev = undefined
    await rm(root, { recursive: true, force: true })
  })

  const get = async (path: string) => {
    const res = await fetch(`${dev!.url}${path}`)
    return { status: res.status, body: (await res.json()) as any }
  }

  it('serves new code for a changed route without restarting the server', async () => {
    dev = await startDevServer({ root, port: 0, host: '127.0.0.1', logger: recordingLogger() })
    const { port } = dev.server
    expect((await get('/api/hello')).body).toEqual({ version: 1 })
    await write(root, 'src/api/hello.ts', `export function GET() { return { version: 2 } }\n`)
    await eventually(async () => expect((await get('/api/hello')).body).toEqual({ version: 2 }))
    expect(dev.server.port).toBe(port)
  })

  it('keeps the module state of routes that did not change', async () => {
    dev = await startDevServer({ root, port: 0, host: '127.0.0.1', logger: recordingLogger(), watch: false })
    await get('/api/counter')
    await get('/api/counter')
    await write(root, 'src/api/hello.ts', `export function GET() { return { version: 3 } }\n`)
    await dev.reload(['api/hello.ts'])
    expect((await get('/api/hello')).body).toEqual({ version: 3 })
    expect((await get('/api/counter')).body).toEqual({ count: 3 })
  })

  it('prints config errors as file:line:col, keeps serving the last good version, and recovers', async () => {
    const logger = recordingLogger()
    dev = await startDevServer({ root, port: 0, host: '127.0.0.1', logger, watch: false })
    await write(
      root,
      'src/api/hello.ts',
      `export const route = { retries: Math.max(1, 2) }\nexport function GET() { return { version: 4 } }\n`,
    )
    await dev.reload(['api/hello.ts'])
    expect(logger.lines.some(({ text: line }) => /^src\/api\/hello\.ts:1:33: route\.retries must be a static literal/.test(line))).toBe(
      true,
    )
    expect(dev.errors).toHaveLength(1)
    expect((await get('/api/hello')).body).toEqual({ version: 1 })
    await write(root, 'src/api/hello.ts', `export function GET() { return { version: 5 } }\n`)
    await dev.reload(['api/hello.ts'])
    expect(dev.errors).toEqual([])
    expect((await get('/api/hello')).body).toEqual({ version: 5 })
  })

  it('reports a module that fails to load and keeps its previous version', async () => {
    const logger = recordingLogger()
    dev = await startDevServer({ root, port: 0, host: '127.0.0.1', logger, watch: false })
    await write(root, 'src/api/hello.ts', `throw new Error('boom at load')\nexport function GET() { return {} }\n`)
    await dev.reload(['api/hello.ts'])
    expect(logger.lines.some(({ text: line }) => line.includes('src/api/hello.ts') && line.includes('boom at load'))).toBe(true)
    expect((await get('/api/hello')).body).toEqual({ version: 1 })
  })

  it('serves added routes and drops deleted ones', async () => {
    dev = await startDevServer({ root, port: 0, host: '127.0.0.1', logger: recordingLogger(), watch: false })
    await write(root, 'src/api/added.ts', `export function GET() { return { added: true } }\n`)
    await rm(join(root, 'src/api/counter.ts'))
    await dev.reload(['api/added.ts', 'api/counter.ts'])
    expect((await get('/api/added')).body).toEqual({ added: true })
    expect((await get('/api/counter')).status).toBe(404)
  })

  it('keeps open WebSockets of unchanged routes and closes those of a reloaded hot route with 1012', async () => {
    dev = await startDevServer({ root, port: 0, host: '127.0.0.1', logger: recordingLogger(), watch: false })
    const ws = new WebSocket(`${dev.url.replace('http', 'ws')}/api/echo`)
    await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject))
    const echo = (text: string) =>
      new Promise<string>((resolve) => {
        ws.once('message', (data) => resolve(String(data)))
        ws.send(text)
      })

    await write(root, 'src/api/hello.ts', `export function GET() { return { version: 6 } }\n`)
    await dev.reload(['api/hello.ts'])
    expect(await echo('still here')).toBe('v1:still here')

    const closed = new Promise<number>((resolve) => ws.once('close', (code) => resolve(code)))
    await write(
      root,
      'src/api/echo.ts',
      `export const route = { kind: 'hot' } as const\nexport function websocket(peer: any) { peer.on('message', (m: unknown) => peer.send('v2:' + m)) }\n`,
    )
    await dev.reload(['api/echo.ts'])
    expect(await closed).toBe(1012)

    const again = new WebSocket(`${dev.url.replace('http', 'ws')}/api/echo`)
    await new Promise((resolve, reject) => again.once('open', resolve).once('error', reject))
    const reply = await new Promise<string>((resolve) => {
      again.once('message', (data) => resolve(String(data)))
      again.send('new')
    })
    again.close()
    expect(reply).toBe('v2:new')
  })

  it('checks events against src/events.ts, and picks up a change to it on reload', async () => {
    const schema = (field: string) =>
      `export const events = { 'order.paid': { '~standard': { version: 1, vendor: 't', validate: (v: any) => typeof v?.${field} === 'string' ? { value: v } : { issues: [{ message: '${field} must be a string', path: ['${field}'] }] } } } }\n`
    await write(root, 'src/events.ts', schema('orderId'))
    dev = await startDevServer({ root, port: 0, host: '127.0.0.1', logger: recordingLogger(), watch: false })
    const send = (data: unknown) =>
      fetch(`${dev!.url}/__events/order.paid`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(data),
      })
    expect((await send({ orderId: 'o-1' })).status).toBe(202)
    expect(await (await send({ ref: 'r-1' })).json()).toMatchObject({ code: 'VALIDATION_FAILED', details: [{ path: ['orderId'] }] })
    await write(root, 'src/events.ts', schema('ref'))
    await dev.reload(['events.ts'])
    expect((await send({ ref: 'r-1' })).status).toBe(202)
    expect((await send({ orderId: 'o-1' })).status).toBe(400)
    // The types know the event too.
    expect(await readFile(join(root, '.svc/types.d.ts'), 'utf8')).toContain('"order.paid": {')
  })

  it('prints what a run logs with ctx.log, with its task and run id', async () => {
    await write(
      root,
      'src/api/jobs/tell.ts',
      `export const kind = 'task'\nexport async function POST(ctx: any) { ctx.log.warn('low stock', { sku: 'a-1' }); await ctx.step.run('count', () => ctx.log.info('counted')) }\n`,
    )
    const logger = recordingLogger()
    dev = await startDevServer({ root, port: 0, host: '127.0.0.1', logger, watch: false })
    const { id } = (await (await fetch(`${dev.url}/__tasks/jobs.tell`, { method: 'POST' })).json()) as { id: string }
    await eventually(async () => expect(logger.text('info')).toContain(`[jobs.tell ${id} attempt 1 step count] counted`))
    expect(logger.text('warn')).toContain(`[jobs.tell ${id} attempt 1] low stock {"sku":"a-1"}`)
  })

  it('imports src/instrumentation.ts before any route, once, and reports one that fails without stopping', async () => {
    await write(root, 'src/instrumentation.ts', `;(globalThis as any).__svcSetUp = ((globalThis as any).__svcSetUp ?? 0) + 1\n`)
    await write(root, 'src/api/setup.ts', `const seen = (globalThis as any).__svcSetUp\nexport function GET() { return { seen } }\n`)
    dev = await startDevServer({ root, port: 0, host: '127.0.0.1', logger: recordingLogger(), watch: false })
    expect((await get('/api/setup')).body).toEqual({ seen: 1 })
    await dev.close()

    await write(root, 'src/instrumentation.ts', `throw new Error('no collector configured')\n`)
    const logger = recordingLogger()
    dev = await startDevServer({ root, port: 0, host: '127.0.0.1', logger, watch: false })
    expect(logger.text('error')).toMatch(/src\/instrumentation\.ts: .*no collector configured/)
    expect((await get('/api/hello')).body).toEqual({ version: 1 })
  })

  it('opens the task admin surface to localhost without a secret', async () => {
    await write(root, 'src/api/job.ts', `export const kind = 'task'\nexport async function POST() { return 'done' }\n`)
    dev = await startDevServer({ root, port: 0, host: '127.0.0.1', logger: recordingLogger(), watch: false })
    const res = await fetch(`${dev.url}/__tasks/job`, { method: 'POST' })
    expect(res.status).toBe(202)
  })

  it('prints the URL and the route table from the CLI, and rejects a bad --port', async () => {
    await write(root, 'src/api/jobs/notify.ts', `export const kind = 'task'\nexport async function POST() { return 'sent' }\n`)
    const child = spawn(process.execPath, [cli, 'dev', '--root', root, '--port', '0', '--host', '127.0.0.1'], {
      env: { ...process.env, NODE_ENV: 'development' },
    })
    let out = ''
    child.stdout.on('data', (chunk) => (out += chunk))
    const exited = new Promise((resolve) => child.once('exit', resolve))
    try {
      await eventually(async () => expect(out).toMatch(/Task admin/), 10_000)
      expect(out).toMatch(/svc dev: http:\/\/127\.0\.0\.1:\d+/)
      expect(out).toMatch(/\/api\/echo\s+hot\s+WS/)
      expect(out).toMatch(/\/api\/hello\s+serverless\s+GET/)
      const url = out.match(/svc dev: (\S+)/)![1]
      expect(await (await fetch(`${url}/api/hello`)).json()).toEqual({ version: 1 })
      // A task is started at the task admin surface, so its row shows where to POST.
      const task = out.split('\n').find((line) => /\stask\s/.test(line))
      expect(task).toMatch(/^\/__tasks\/jobs\.notify\s+task\s+POST\s+on demand$/)
      expect((await fetch(`${url}${task!.split(/\s+/)[0]}`, { method: 'POST' })).status).toBe(202)
    } finally {
      child.kill('SIGINT')
      await exited
    }

    const bad = spawn(process.execPath, [cli, 'dev', '--root', root, '--port', 'abc'])
    let err = ''
    bad.stderr.on('data', (chunk) => (err += chunk))
    const code = await new Promise((resolve) => bad.once('exit', resolve))
    expect(code).toBe(1)
    expect(err).toContain('--port must be a whole number from 0 to 65535 (got "abc")')
  })
})
