// A hot route: one chat room shared by every connection of this process.
import type { SvcRequest } from 'svcjs'

export const route = {
  kind: 'hot',
  origins: ['http://localhost:3000', 'http://127.0.0.1:3000'],
} as const

interface Peer {
  send(data: string): void
  on(event: 'message', fn: (data: string | Uint8Array) => void): void
  on(event: 'close', fn: () => void): void
}

// Module scope lives as long as the process: every connection sees the same room.
const peers = new Set<Peer>()
const history: string[] = []

export function websocket(peer: Peer, req: SvcRequest) {
  const name = req.query('name') || 'anonymous'
  peers.add(peer)
  for (const line of history) peer.send(line)
  peer.on('message', (data) => {
    const line = `${name}: ${typeof data === 'string' ? data : new TextDecoder().decode(data)}`
    history.push(line)
    if (history.length > 50) history.shift()
    for (const other of peers) other.send(line)
  })
  peer.on('close', () => peers.delete(peer))
}

// Plain HTTP coexists with the socket: GET /api/chat shows who is here.
export function GET() {
  return { online: peers.size, messages: history.length }
}
