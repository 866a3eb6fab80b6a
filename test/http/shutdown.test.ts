import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import WebSocket from 'ws'
import { describe, expect, it } from 'vitest'
import { createTaskRuntime, type RuntimeApiRoute } from '../../src/index.ts'
import { deferred, RawConnection, recordingLogger, serve, sleep, until } from './_helpers.ts'

function slowRoutes() {
  const gate = deferred()
  const state = { started: 0 }
  const routes: RuntimeApiRoute[] = [
    {
      path: '/api/slow',
      module: {
        GET: async () => {
          state.started++
          await gate.promise
          return { finished: true }
        },
      },
    },
    { path: '/api/hello', module: { GET: () => ({ hello: 'world' }) } },
  ]
  return { routes, gate, state }
}

describe('graceful shutdown', () => {
  it('lets every request in flight finish: none is dropped', async () => {
    const { routes, gate, state } = slowRoutes()
    const server = await serve({ apiRoutes: routes })
    const requests = Array.from({ length: 20 }, () => fetch(`${server.url}/api/slow`).then(async (r) => [r.status, await r.json()]))
    await until(() => state.started === 20)
    let closed = false
    const closing = server.close().then(() => (closed = true))
    await sleep(100)
    expect(closed).toBe(false)
    gate.resolve()
    const answers = await Promise.all(requests)
    expect(answers).toEqual(Array.from({ length: 20 }, () => [200, { finished: true }]))
    await closing
    expect(server.server.listening).toBe(false)
  })

  it('refuses new connections once close() begins', async () => {
    const { routes, gate, state } = slowRoutes()
    const server = await serve({ apiRoutes: routes })
    const inflight = fetch(`${server.url}/api/slow`)
    await until(() => state.started === 1)
    const closing = server.close()
    await expect(fetch(`${server.url}/api/hello`)).rejects.toThrow()
    gate.resolve()
    expect((await inflight).status).toBe(200)
    await closing
  })

  it('answers a request on an open keep-alive connection during the drain with 503 and Connection: close', async () => {
    const { routes, gate, state } = slowRoutes()
    const server = await serve({ apiRoutes: routes })
    const idle = new RawConnection(server.port)
    await idle.ready()
    idle.send('GET', '/api/hello')
    expect((await idle.next())!.headers.connection).toBe('keep-alive')

    const busy = new RawConnection(server.port)
    await busy.ready()
    busy.send('GET', '/api/slow')
    await until(() => state.started === 1)
    const closing = server.close()
    await sleep(50)

    // An idle keep-alive connection stays open during the drain and gets a 503 it can retry.
    idle.send('GET', '/api/hello')
    const refused = await idle.next()
    expect(refused!.status).toBe(503)
    expect(refused!.headers.connection).toBe('close')
    expect(JSON.parse(refused!.body).code).toBe('SHUTTING_DOWN')
    await until(() => idle.closed)

    // A request pipelined behind one in flight: the first finishes, the second gets the 503.
    busy.send('GET', '/api/hello')
    await sleep(50)
    gate.resolve()
    const first = await busy.next()
    expect(first!.status).toBe(200)
    expect(JSON.parse(first!.body)).toEqual({ finished: true })
    const second = await busy.next()
    expect(second!.status).toBe(503)
    expect(second!.headers.connection).toBe('close')
    await closing
  })

  it('closes WebSockets with 1001 on close()', async () => {
    const server = await serve({ apiRoutes: [{ path: '/api/ws', module: { websocket: () => {} } }] })
    const ws = new WebSocket(`${server.url.replace('http', 'ws')}/api/ws`)
    await new Promise((resolve) => ws.once('open', resolve))
    const code = new Promise((resolve) => ws.once('close', (c) => resolve(c)))
    await server.close()
    expect(await code).toBe(1001)
  })

  it('refuses WebSocket upgrades during the drain with 503', async () => {
    const { routes, gate, state } = slowRoutes()
    const server = await serve({ apiRoutes: [...routes, { path: '/api/ws', module: { websocket: () => {} } }] })
    const idle = new RawConnection(server.port)
    await idle.ready()
    idle.send('GET', '/api/hello')
    await idle.next()
    const inflight = fetch(`${server.url}/api/slow`)
    await until(() => state.started === 1)
    const closing = server.close()
    idle.send('GET', '/api/ws', {
      upgrade: 'websocket',
      connection: 'Upgrade',
      'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==',
      'sec-websocket-version': '13',
    })
    const refused = await idle.next()
    expect(refused!.status).toBe(503)
    expect(JSON.parse(refused!.body).code).toBe('SHUTTING_DOWN')
    gate.resolve()
    expect((await inflight).status).toBe(200)
    await closing
  })

  it('waits for task attempts in flight, and stops the scheduler', async () => {
    let finished = false
    const routes: RuntimeApiRoute[] = [
      {
        path: '/api/nightly',
        module: {
          kind: 'task',
          schedule: '0 3 * * *',
          POST: async () => {
            await sleep(300)
            finished = true
          },
        },
      },
    ]
    const runtime = createTaskRuntime({ routes, logger: recordingLogger() })
    const server = await serve({ apiRoutes: routes, runtime })
    expect(runtime.scheduledJobs()[0].inProcess).toBe(true)
    await runtime.trigger('nightly')
    await server.close()
    expect(finished).toBe(true)
    expect(runtime.scheduledJobs()[0].inProcess).toBe(false)
    // A runtime passed in is the caller's: it is drained, not closed.
    const again = await runtime.trigger('nightly')
    expect((await runtime.waitForRun(again.id)).status).toBe('completed')
    await runtime.close()
  })

  it('forces the remaining connections closed after shutdownTimeoutMs', async () => {
    const { routes, state } = slowRoutes()
    const server = await serve({ apiRoutes: routes, shutdownTimeoutMs: 200 })
    const stuck = fetch(`${server.url}/api/slow`).then(
      () => 'answered',
      () => 'connection closed',
    )
    await until(() => state.started === 1)
    const started = Date.now()
    await server.close()
    expect(Date.now() - started).toBeLessThan(2000)
    expect(await stuck).toBe('connection closed')
    expect(server.logger.text()).toContain('1 request(s) still in flight after 200 ms')
  })

  it('is idempotent', async () => {
    const server = await serve()
    const a = server.close()
    expect(server.close()).toBe(a)
    await a
  })

  it('closes without waiting for a suspended run to finish', async () => {
    const napper: RuntimeApiRoute = {
      path: '/api/napper',
      module: {
        kind: 'task',
        POST: async (ctx: any) => {
          await ctx.step.sleep('long-nap', 3600)
          return 'woke'
        },
      },
    }
    const server = await serve({ apiRoutes: [napper], shutdownTimeoutMs: 60_000 })
    const res = await fetch(`${server.url}/__tasks/napper`, { method: 'POST' })
    const { id } = (await res.json()) as { id: string }
    await until(async () => (await server.runtime.getRun(id))?.status === 'suspended')
    expect((await server.runtime.getRun(id))?.status).toBe('suspended')
    // A suspended run waits on a timer, not on a request: the drain must not hold close() until its deadline.
    const outcome = await Promise.race([
      server.close().then(() => 'closed'),
      new Promise((r) => setTimeout(() => r('still waiting'), 5000)),
    ])
    expect(outcome).toBe('closed')
  })
})

describe('SIGTERM', () => {
  it('drains a server in a child process and ends it with the signal, without dropping the request in flight', async () => {
    const script = fileURLToPath(new URL('../fixtures/http-sigterm/server.ts', import.meta.url))
    const child = spawn(process.execPath, [script], { env: { ...process.env, NODE_ENV: 'production' }, stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    let err = ''
    child.stdout.on('data', (c) => (out += c))
    child.stderr.on('data', (c) => (err += c))
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
      child.once('exit', (code, signal) => resolve({ code, signal })),
    )
    try {
      const port = Number(await until(() => /port (\d+)/.exec(out)?.[1], 15_000))
      const inflight = fetch(`http://127.0.0.1:${port}/api/slow`).then(async (r) => [r.status, await r.json()])
      await until(() => out.includes('handling'))
      child.kill('SIGTERM')
      expect(await inflight).toEqual([200, { finished: true }])
      expect(await exited).toEqual({ code: null, signal: 'SIGTERM' })
      expect(err).toContain('SIGTERM: draining')
    } finally {
      child.kill('SIGKILL')
    }
  })
})
