/**
 * What a client sends is parsed in time linear in its size: a header or a
 * path built to make a backtracking regular expression take the square of
 * its length is answered at once, and the server goes on answering others
 * meanwhile. The server runs in a child process whose header limit admits
 * megabyte headers and paths; at these sizes a quadratic parser holds the
 * event loop for minutes, so /__health could not answer in time.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { request } from 'node:http'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { until } from './_helpers.ts'

let child: ChildProcess
let port = 0

beforeAll(async () => {
  const script = fileURLToPath(new URL('../fixtures/hostile-requests/server.ts', import.meta.url))
  child = spawn(process.execPath, ['--max-http-header-size=4194304', script], { stdio: ['ignore', 'pipe', 'pipe'] })
  let out = ''
  child.stdout!.on('data', (c) => (out += c))
  child.stderr!.on('data', (c) => process.stderr.write(c))
  port = Number(await until(() => /port (\d+)/.exec(out)?.[1], 60_000))
}, 90_000)

afterAll(() => {
  child?.kill('SIGKILL')
})

/** A request through node:http, whose client has no header or URL size limit of its own. */
function send(method: string, path: string, headers: Record<string, string> = {}, body?: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method, path, headers, timeout: 60_000 }, (res) => {
      res.resume()
      res.on('end', () => resolve(res.statusCode!))
    })
    req.on('error', reject)
    req.end(body)
  })
}

/** Sends `hostile`, then checks that /__health answers within 5 s while it is in flight, and that it is answered itself. */
async function answeredAlongsideHealth(hostile: () => Promise<number>): Promise<number> {
  const pending = hostile()
  await new Promise((resolve) => setTimeout(resolve, 100))
  const health = await Promise.race([
    send('GET', '/__health'),
    new Promise<string>((resolve) => setTimeout(() => resolve('no answer within 5 s'), 5_000)),
  ])
  expect(health).toBe(200)
  return pending
}

const MIB = 1024 * 1024
/** The task secret of the fixture server (../fixtures/hostile-requests/server.ts). */
const SECRET = 't'.repeat(32)
const auth = { authorization: `Bearer ${SECRET}`, 'content-type': 'application/json' }

describe('requests shaped to make a parser quadratic', () => {
  it('a megabyte Authorization header of blanks gets its 401 at once', async () => {
    const status = await answeredAlongsideHealth(() => send('GET', '/__tasks', { authorization: `Bearer x${' '.repeat(MIB)}y` }))
    expect(status).toBe(401)
    expect(await send('GET', '/__tasks', { authorization: `Bearer ${'\t'.repeat(MIB)}` })).toBe(401)
    expect(await send('GET', '/__tasks', { authorization: `Bearer ${SECRET}${' '.repeat(MIB)}` })).toBe(200)
  })

  it('a path of 100,000 slashes is answered by the dashboard and the admin surface', async () => {
    const slashes = '/'.repeat(100_000)
    expect(await answeredAlongsideHealth(() => send('GET', `/__svc/dashboard${slashes}x`))).toBe(404)
    expect(await answeredAlongsideHealth(() => send('GET', `/__tasks${slashes}x`, auth))).toBe(404)
    expect(await send('GET', `/__svc/dashboard${slashes}`)).toBe(200)
    expect(await send('GET', `/__tasks${slashes}`, auth)).toBe(200)
  })

  it("a hybrid page's purge of a path of 100,000 slashes is answered", async () => {
    const path = `/posts${'/'.repeat(100_000)}x`
    const status = await answeredAlongsideHealth(() => send('POST', '/__svc/revalidate', auth, JSON.stringify({ paths: [path] })))
    expect(status).toBe(200)
  })
})
