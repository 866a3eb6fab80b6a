import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import WebSocket from 'ws'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { startDevServer, type DevServer } from '../../src/dev/server.ts'
import { recordingLogger, write } from './_helpers.ts'

const HOT = `export const route = { kind: 'hot' } as const
export function websocket(peer: any) { peer.on('message', (m: unknown) => peer.send('echo:' + m)) }
`

/** An open client that records its close code. */
async function connect(url: string): Promise<{ ws: WebSocket; closed: () => number | undefined; echo: (text: string) => Promise<string> }> {
  const ws = new WebSocket(url)
  await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject))
  let code: number | undefined
  ws.on('close', (c) => (code = c))
  const echo = (text: string) =>
    new Promise<string>((resolve, reject) => {
      ws.once('message', (data) => resolve(String(data)))
      ws.once('close', () => reject(new Error('closed')))
      ws.send(text)
    })
  return { ws, closed: () => code, echo }
}

async function waitFor(check: () => boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!check()) {
    if (Date.now() > deadline) throw new Error('Timed out waiting for a condition')
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

describe('svc dev when routes are removed or change kind', () => {
  let root: string
  let dev: DevServer | undefined

  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'svc-dev-'))
    await write(root, 'src/api/counter.ts', `let count = 0\nexport function GET() { count++; return { count } }\n`)
    await write(root, 'src/api/other.ts', `export function GET() { return { other: true } }\n`)
    await write(root, 'src/api/chat.ts', HOT)
    await write(root, 'src/api/room.ts', HOT)
    dev = await startDevServer({ root, port: 0, host: '127.0.0.1', logger: recordingLogger(), watch: false })
  })
  afterEach(async () => {
    await dev?.close()
    dev = undefined
    await rm(root, { recursive: true, force: true })
  })

  const count = async () => ((await (await fetch(`${dev!.url}/api/counter`)).json()) as { count: number }).count
  const wsUrl = (path: string) => `${dev!.url.replace('http', 'ws')}${path}`

  it('keeps the state and open sockets of the other routes when a route file is deleted', async () => {
    expect(await count()).toBe(1)
    const chat = await connect(wsUrl('/api/chat'))
    await rm(join(root, 'src/api/other.ts'))
    await dev!.reload(['api/other.ts'])
    expect((await fetch(`${dev!.url}/api/other`)).status).toBe(404)
    // A deleted route is not a shared helper: nothing else is imported again.
    expect(await count()).toBe(2)
    expect(await chat.echo('still open')).toBe('echo:still open')
    expect(chat.closed()).toBeUndefined()
    chat.ws.close()
  })

  it('keeps state across a rename: the old and new names are both route files', async () => {
    expect(await count()).toBe(1)
    await rm(join(root, 'src/api/other.ts'))
    await write(root, 'src/api/renamed.ts', `export function GET() { return { other: true } }\n`)
    await dev!.reload(['api/other.ts', 'api/renamed.ts'])
    expect((await fetch(`${dev!.url}/api/renamed`)).status).toBe(200)
    expect(await count()).toBe(2)
  })

  it('closes the sockets of a deleted hot route with 1012, and only those', async () => {
    const chat = await connect(wsUrl('/api/chat'))
    const room = await connect(wsUrl('/api/room'))
    await rm(join(root, 'src/api/chat.ts'))
    await dev!.reload(['api/chat.ts'])
    // Its code is gone from the app: clients reconnect and learn it (404).
    await waitFor(() => chat.closed() !== undefined)
    expect(chat.closed()).toBe(1012)
    expect(await room.echo('here')).toBe('echo:here')
    expect(room.closed()).toBeUndefined()
    room.ws.close()
  })

  it('closes the sockets of a hot route that became a serverless route', async () => {
    const chat = await connect(wsUrl('/api/chat'))
    await write(root, 'src/api/chat.ts', `export function GET() { return { plain: true } }\n`)
    await dev!.reload(['api/chat.ts'])
    await waitFor(() => chat.closed() !== undefined)
    expect(chat.closed()).toBe(1012)
    expect(await (await fetch(`${dev!.url}/api/chat`)).json()).toEqual({ plain: true })
  })
})
