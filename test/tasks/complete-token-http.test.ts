import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { HttpError } from '../../src/runtime/errors.ts'
import { completeTokenOverHttp } from '../../src/runtime/tasks/client.ts'

const servers: Server[] = []
afterEach(async () => {
  for (const server of servers.splice(0)) await new Promise((resolve) => server.close(resolve))
})

/** A server that answers every request with `status`, `body` and `type`. */
async function answer(status: number, body: string, type = 'application/json'): Promise<string> {
  const server = createServer((req, res) => {
    req.resume()
    req.on('end', () => res.writeHead(status, { 'content-type': type }).end(body))
  })
  servers.push(server)
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

// README: completeToken resolves to 'not_found', 'already_completed' or
// 'timed_out' only for what the task server says about the token
// (TOKEN_NOT_FOUND, TOKEN_ALREADY_COMPLETED, TOKEN_TIMED_OUT). Any other 404
// or 409 (SVC_TASK_URL pointing at the wrong server or path, a proxy) is
// not an answer about the token and must reject, never be swallowed into
// a plausible result.
describe('completeToken over HTTP: answers that are not about the token', () => {
  it('a 404 page from another server rejects with HttpError instead of not_found', async () => {
    const url = await answer(404, '<html><body>Cannot POST /__tasks/tokens/t</body></html>', 'text/html')
    const error = (await completeTokenOverHttp('t', undefined, { SVC_TASK_URL: url }).catch((e) => e)) as HttpError
    expect(error).toBeInstanceOf(HttpError)
    expect(error.status).toBe(404)
    expect(error.message).toContain('Cannot POST')
  })

  it('a 404 with another JSON error code rejects too', async () => {
    const url = await answer(404, '{"error":"No such route","code":"ROUTE_MISSING"}')
    await expect(completeTokenOverHttp('t', undefined, { SVC_TASK_URL: url })).rejects.toMatchObject({ status: 404, code: 'ROUTE_MISSING' })
  })

  it('a 409 that does not speak of the token rejects instead of already_completed', async () => {
    const url = await answer(409, '{"error":"Edit conflict","code":"CONFLICT"}')
    await expect(completeTokenOverHttp('t', undefined, { SVC_TASK_URL: url })).rejects.toMatchObject({ status: 409, code: 'CONFLICT' })
  })

  it("the task server's own answers still map to results", async () => {
    const cases: [number, string, string][] = [
      [404, '{"code":"TOKEN_NOT_FOUND","error":"No waitForToken is waiting on token \\"t\\""}', 'not_found'],
      [409, '{"code":"TOKEN_ALREADY_COMPLETED","status":"already_completed"}', 'already_completed'],
      [409, '{"code":"TOKEN_TIMED_OUT","status":"timed_out"}', 'timed_out'],
    ]
    for (const [status, body, result] of cases) {
      const url = await answer(status, body)
      expect(await completeTokenOverHttp('t', undefined, { SVC_TASK_URL: url })).toBe(result)
    }
  })
})
