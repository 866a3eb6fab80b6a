import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import type { RuntimeApiRoute } from '../../src/index.ts'
import { createVercelHandler } from '../../targets/vercel/runtime.ts'

const servers: Server[] = []
afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections()
    await new Promise((resolve) => server.close(resolve))
  }
})

/** The function's (req, res) handler behind a real Node server, as Vercel's Node launcher calls it. */
async function serveFunction(routes: RuntimeApiRoute[]): Promise<{ base: string; failures: unknown[] }> {
  const handler = createVercelHandler({ routes, logger: { info() {}, warn() {}, error() {} } })
  const failures: unknown[] = []
  const server = createServer((req, res) => void handler(req, res).catch((error) => failures.push(error)))
  servers.push(server)
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return { base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, failures }
}

function deferred() {
  let resolve!: () => void
  const promise = new Promise<void>((r) => (resolve = r))
  return { promise, resolve }
}

describe('the Vercel function and streamed response bodies', () => {
  it('ends the response when the body stream fails midway, instead of leaving the client waiting', async () => {
    const routes: RuntimeApiRoute[] = [
      {
        path: '/api/broken',
        module: {
          GET: () =>
            new Response(
              new ReadableStream({
                start(controller) {
                  controller.enqueue(new TextEncoder().encode('partial'))
                  controller.error(new Error('the source failed'))
                },
              }),
              { headers: { 'content-type': 'text/plain' } },
            ),
        },
      },
    ]
    const { base, failures } = await serveFunction(routes)
    // A generous guard: without the fix the body never ends and only this abort stops the read.
    const guard = AbortSignal.timeout(10_000)
    // Whether the head got out first or not, the client must see a failure, not a complete body.
    await expect(fetch(`${base}/api/broken`, { signal: guard }).then((res) => res.text())).rejects.toThrow()
    expect(guard.aborted).toBe(false)
    // The error still reaches the platform, which logs it.
    expect(failures).toHaveLength(1)
  })

  it('cancels the body stream when the client goes away', async () => {
    const cancelled = deferred()
    let timer: ReturnType<typeof setInterval> | undefined
    const routes: RuntimeApiRoute[] = [
      {
        path: '/api/events',
        module: {
          // An endless event stream: only a cancel stops it.
          GET: () =>
            new Response(
              new ReadableStream({
                start(controller) {
                  timer = setInterval(() => controller.enqueue(new TextEncoder().encode('data: tick\n\n')), 10)
                },
                cancel() {
                  clearInterval(timer)
                  cancelled.resolve()
                },
              }),
              { headers: { 'content-type': 'text/event-stream' } },
            ),
        },
      },
    ]
    const { base } = await serveFunction(routes)
    const client = new AbortController()
    const res = await fetch(`${base}/api/events`, { signal: client.signal })
    const reader = res.body!.getReader()
    await reader.read()
    client.abort()
    const outcome = await Promise.race([
      cancelled.promise.then(() => 'cancelled'),
      new Promise((resolve) => setTimeout(() => resolve('still streaming'), 10_000)),
    ])
    clearInterval(timer)
    expect(outcome).toBe('cancelled')
  })
})
