import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { HttpError } from '../../src/runtime/errors.ts'
import { completeToken, enqueue, setActiveTaskRuntime } from '../../src/runtime/tasks/index.ts'

const ENV_KEYS = ['SVC_TASK_URL', 'SVC_TASK_TIMEOUT_MS'] as const
const saved = Object.fromEntries(ENV_KEYS.map((k) => [k, process.env[k]]))
const servers: Server[] = []

async function serve(handler: Parameters<typeof createServer>[1]): Promise<string> {
  const server = createServer(handler)
  servers.push(server)
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

afterEach(async () => {
  for (const k of ENV_KEYS) {
    if (saved[k] === undefined) delete process.env[k]
    else process.env[k] = saved[k]
  }
  setActiveTaskRuntime(null)
  for (const server of servers.splice(0)) {
    server.closeAllConnections()
    await new Promise((resolve) => server.close(resolve))
  }
})

describe('enqueue over HTTP: timeouts and redirects', () => {
  it('rejects with HttpError status 0 and code TIMEOUT when the server does not answer in time', async () => {
    process.env.SVC_TASK_URL = await serve(() => {
      // Never answers.
    })
    process.env.SVC_TASK_TIMEOUT_MS = '100'
    const error = await enqueue('report', { a: 1 }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(HttpError)
    expect(error).toMatchObject({ status: 0, code: 'TIMEOUT' })
    expect((error as Error).message).toMatch(/did not answer within 100 ms.*idempotencyKey/)
    await expect(completeToken('run:key', { ok: true })).rejects.toMatchObject({ status: 0, code: 'TIMEOUT' })
  })

  it('does not follow a redirect, which would turn the POST into a GET', async () => {
    let redirectedHits = 0
    const target = await serve((_req, res) => {
      redirectedHits++
      res.writeHead(202, { 'content-type': 'application/json' }).end('{"id":"x","status":"running"}')
    })
    process.env.SVC_TASK_URL = await serve((_req, res) => res.writeHead(302, { location: `${target}/__tasks/report` }).end())
    await expect(enqueue('report', { a: 1 })).rejects.toMatchObject({ status: 302 })
    expect(redirectedHits).toBe(0)
  })

  it('rejects a SVC_TASK_TIMEOUT_MS that is not a positive number', async () => {
    process.env.SVC_TASK_URL = 'http://127.0.0.1:9'
    process.env.SVC_TASK_TIMEOUT_MS = 'soon'
    await expect(enqueue('report')).rejects.toThrow('SVC_TASK_TIMEOUT_MS must be a positive number of milliseconds (got "soon")')
  })
})
