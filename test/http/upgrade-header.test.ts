import { connect } from 'node:net'
import { describe, expect, it } from 'vitest'
import type { RuntimeApiRoute } from '../../src/index.ts'
import { serve } from './_helpers.ts'

const [major, minor] = process.versions.node.split('.').map(Number)
// http.Server's shouldUpgradeCallback, which lets a server decline an Upgrade, arrived in Node 24.9.
const canDeclineUpgrades = major > 24 || (major === 24 && minor >= 9)

const routes: RuntimeApiRoute[] = [{ path: '/api/echo', module: { POST: async (req) => ({ body: await req.text() }) } }]

/** Sends `raw` on a fresh connection and resolves with everything the server wrote until it closed or went quiet. */
function exchange(port: number, raw: string): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1')
    let out = ''
    let timer: ReturnType<typeof setTimeout> | undefined
    const done = () => {
      clearTimeout(timer)
      socket.destroy()
      resolve(out)
    }
    socket.on('data', (chunk) => {
      out += chunk
      // One answer is all these tests expect; the connection may stay open after it.
      clearTimeout(timer)
      timer = setTimeout(done, 200)
    })
    socket.on('close', done)
    socket.on('error', done)
    socket.write(raw)
  })
}

describe('requests that offer an upgrade to something other than WebSocket', () => {
  // `curl --http2` on an http:// URL sends `Upgrade: h2c` with its request
  // body. A server may ignore an Upgrade it does not speak (RFC 9110 §7.8);
  // taking the request as an upgrade instead lost the body.
  it.skipIf(!canDeclineUpgrades)('are served as plain requests, body included', async () => {
    const server = await serve({ apiRoutes: routes })
    const out = await exchange(
      server.port,
      'POST /api/echo HTTP/1.1\r\nhost: localhost\r\nconnection: Upgrade, HTTP2-Settings\r\nupgrade: h2c\r\nhttp2-settings: AAMAAABkAAQAoAAAAAIAAAAA\r\ncontent-length: 5\r\n\r\nhello',
    )
    expect(out).toMatch(/^HTTP\/1\.1 200 /)
    expect(out.slice(out.indexOf('\r\n\r\n') + 4)).toBe('{"body":"hello"}')
  })
})
