import * as v from 'valibot'
import WebSocket from 'ws'
import { describe, expect, it } from 'vitest'
import { defineSchema, type HotPeer, type RuntimeApiRoute, type SvcRequest } from '../../src/index.ts'
import { refusal, serve } from './_helpers.ts'

let opened = 0

// A hot route whose schema checks the handshake's params, query and headers.
const room: RuntimeApiRoute = {
  path: '/api/rooms/:room',
  origins: ['https://app.example'],
  module: {
    schema: defineSchema({
      params: v.object({ room: v.pipe(v.string(), v.regex(/^[a-z]+$/)) }),
      query: v.object({ seat: v.pipe(v.string(), v.regex(/^\d+$/), v.transform(Number)) }),
    }),
    websocket(peer: HotPeer, req: SvcRequest) {
      opened++
      peer.send(JSON.stringify({ param: req.valid('param'), query: req.valid('query') }))
    },
  },
}

describe('a hot route’s schema on the WebSocket handshake', () => {
  // Spec "Route configuration": a route's schema is applied to its handler;
  // for a hot route that handler is websocket(), and the handshake is its request.
  it('refuses a handshake that fails the schema with 400 VALIDATION_FAILED, before websocket() runs', async () => {
    const server = await serve({ apiRoutes: [room] })
    const before = opened
    const res = await refusal(`${server.url.replace('http', 'ws')}/api/rooms/Lobby?seat=x`)
    expect(res.status).toBe(400)
    const body = JSON.parse(res.body)
    expect(body.code).toBe('VALIDATION_FAILED')
    expect(body.details.map((d: { target: string }) => d.target).sort()).toEqual(['params', 'query'])
    expect(opened).toBe(before)
  })

  it('hands the validated values to websocket() through req.valid()', async () => {
    const server = await serve({ apiRoutes: [room] })
    const ws = new WebSocket(`${server.url.replace('http', 'ws')}/api/rooms/lobby?seat=7`)
    const message = await new Promise<string>((resolve, reject) => {
      ws.once('message', (data) => resolve(String(data)))
      ws.once('error', reject)
    })
    ws.close()
    expect(JSON.parse(message)).toEqual({ param: { room: 'lobby' }, query: { seat: 7 } })
  })

  it('still checks the origin first: a foreign origin gets 403 whatever the query', async () => {
    const server = await serve({ apiRoutes: [room] })
    const res = await refusal(`${server.url.replace('http', 'ws')}/api/rooms/Lobby?seat=x`, { origin: 'https://evil.example' })
    expect(res.status).toBe(403)
  })
})
