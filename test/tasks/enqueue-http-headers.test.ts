import { createServer, type IncomingHttpHeaders, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { HttpError } from '../../src/runtime/errors.ts'
import { enqueueOverHttp } from '../../src/runtime/tasks/client.ts'

const servers: Server[] = []
afterEach(async () => {
  for (const server of servers.splice(0)) await new Promise((resolve) => server.close(resolve))
})

async function taskServer(): Promise<{ url: string; seen: IncomingHttpHeaders[] }> {
  const seen: IncomingHttpHeaders[] = []
  const server = createServer((req, res) => {
    seen.push(req.headers)
    req.resume()
    req.on('end', () => res.writeHead(202, { 'content-type': 'application/json' }).end('{"id":"run-1","status":"running"}'))
  })
  servers.push(server)
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen }
}

// Over HTTP the idempotency key travels in the Idempotency-Key header, which
// holds bytes, not any string. A key it cannot carry is the caller's
// mistake: it must say so, not report that the server could not be reached
// (HttpError status 0, "Is the task server running?") while the server is up.
describe('enqueue over HTTP: an idempotency key a header cannot carry', () => {
  it('is a TypeError naming the option, and nothing is sent', async () => {
    const { url, seen } = await taskServer()
    const error = await enqueueOverHttp('orders.sync', {}, { idempotencyKey: 'commande-日本' }, { SVC_TASK_URL: url }).catch((e) => e)
    expect(error).not.toBeInstanceOf(HttpError)
    expect(error).toBeInstanceOf(TypeError)
    expect(error.message).toBe(
      'enqueue("orders.sync"): idempotencyKey must be text an HTTP header can carry (Latin-1, no line breaks, no space or tab at either end) to be sent to the task server (got "commande-日本")',
    )
    expect(seen).toEqual([])
  })

  it('a line break is refused the same way', async () => {
    const { url } = await taskServer()
    await expect(enqueueOverHttp('orders.sync', {}, { idempotencyKey: 'a\nb' }, { SVC_TASK_URL: url })).rejects.toThrow(
      /idempotencyKey must be text an HTTP header can carry/,
    )
  })

  it('a space or tab at either end is refused the same way: Fetch strips it, so another key would arrive', async () => {
    const { url, seen } = await taskServer()
    for (const key of [' order-7', 'order-7 ', '\torder-7']) {
      await expect(enqueueOverHttp('orders.sync', {}, { idempotencyKey: key }, { SVC_TASK_URL: url })).rejects.toThrow(
        /idempotencyKey must be text an HTTP header can carry .*no space or tab at either end/,
      )
    }
    expect(seen).toEqual([])
    await enqueueOverHttp('orders.sync', {}, { idempotencyKey: 'order 7' }, { SVC_TASK_URL: url })
    expect(seen[0]['idempotency-key']).toBe('order 7')
  })

  it('ASCII and Latin-1 keys are sent as they are', async () => {
    const { url, seen } = await taskServer()
    expect(await enqueueOverHttp('orders.sync', {}, { idempotencyKey: 'order-42-München' }, { SVC_TASK_URL: url })).toEqual({
      runId: 'run-1',
      status: 'running',
    })
    // Node reads header bytes as Latin-1, so the key arrives unchanged.
    expect(seen[0]['idempotency-key']).toBe('order-42-München')
  })

  it('a server that is down is still a network error', async () => {
    const { url } = await taskServer()
    await new Promise((resolve) => servers.pop()!.close(resolve))
    await expect(enqueueOverHttp('orders.sync', {}, { idempotencyKey: 'k' }, { SVC_TASK_URL: url })).rejects.toMatchObject({ status: 0, code: 'NETWORK_ERROR' })
  })

  it.each([
    ['a host and port without a scheme', 'tasks.internal:3000'],
    ['text that is no URL at all', 'tasks internal'],
  ])('%s in SVC_TASK_URL is a TypeError that shows it, not a network error', async (_, base) => {
    const error = await enqueueOverHttp('orders.sync', {}, undefined, { SVC_TASK_URL: base }).catch((e) => e)
    expect(error).toBeInstanceOf(TypeError)
    expect(error.message).toContain(`enqueue("orders.sync"): cannot build a request to ${base}/__tasks/orders.sync: `)
  })
})
