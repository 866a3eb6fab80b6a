/**
 * The native WebSocket load generator of bench:http (bench/ws-load.c),
 * driven against a hand-written server that splits its frames across
 * writes, sends pings and closes, so that each case is one the client must
 * parse from a byte stream (RFC 6455 §5.2).
 */
import { execFile } from 'node:child_process'
import { createHash } from 'node:crypto'
import { createServer, type Server, type Socket } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { nativeWsClient } from '../../bench/_ws-load.ts'
import { sleep } from './_helpers.ts'

const client = nativeWsClient()
const PAYLOAD = 'x'.repeat(32)

/** A server frame (unmasked) of `opcode` with `payload`. */
function frame(opcode: number, payload: Buffer): Buffer {
  return Buffer.concat([Buffer.from([0x80 | opcode, payload.length]), payload])
}

interface Behaviour {
  /** Answer to the handshake instead of 101. */
  refuse?: string
  /** Close with this code after this many echoes on each connection. */
  closeAfter?: { echoes: number; code: number }
}

interface Seen {
  /** Echoes fully written, over all connections. */
  echoes: number
  /** Client frames that were not a masked 32-byte text frame of `PAYLOAD`. */
  badFrames: string[]
  /** Data frames that arrived while the echo of the previous one was still being written. */
  early: number
  pings: number
  pongs: string[]
  /** Close codes the client sent. */
  closes: number[]
}

let server: Server | undefined
afterEach(() => server?.close())

/**
 * Echoes each data frame in three writes a millisecond apart (header, then
 * part of the payload, then the rest), with a ping in the same write as
 * every third echo's header.
 */
async function splittingServer(behaviour: Behaviour = {}): Promise<{ port: number; seen: Seen }> {
  const seen: Seen = { echoes: 0, badFrames: [], early: 0, pings: 0, pongs: [], closes: [] }
  server = createServer((socket) => {
    socket.setNoDelay(true)
    let buffered = Buffer.alloc(0)
    let upgraded = false
    let echoing = false
    let echoes = 0
    socket.on('error', () => {})
    socket.on('data', (chunk) => {
      buffered = Buffer.concat([buffered, chunk])
      if (!upgraded) {
        const end = buffered.indexOf('\r\n\r\n')
        if (end === -1) return
        const head = buffered.subarray(0, end).toString('latin1')
        buffered = buffered.subarray(end + 4)
        if (behaviour.refuse) return void socket.end(`${behaviour.refuse}\r\ncontent-length: 0\r\n\r\n`)
        const key = /sec-websocket-key: (.+)/i.exec(head)?.[1]
        const accept = createHash('sha1').update(`${key}258EAFA5-E914-47DA-95CA-C5AB0DC85B11`).digest('base64')
        socket.write(
          `HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\n\r\n`,
        )
        upgraded = true
      }
      while (buffered.length >= 2) {
        const length = buffered[1] & 0x7f
        if (buffered.length < 6 + length) return
        const masked = (buffered[1] & 0x80) !== 0
        const key = buffered.subarray(2, 6)
        const payload = Buffer.from(buffered.subarray(6, 6 + length).map((b, i) => b ^ key[i % 4]))
        const opcode = buffered[0] & 0x0f
        buffered = buffered.subarray(6 + length)
        if (opcode === 8) {
          seen.closes.push(payload.readUInt16BE(0))
          socket.end(frame(8, payload.subarray(0, 2)))
        } else if (opcode === 10) {
          seen.pongs.push(payload.toString())
        } else {
          if (!masked || opcode !== 1 || payload.toString() !== PAYLOAD) seen.badFrames.push(`${opcode} ${payload}`)
          if (echoing) seen.early++
          echoing = true
          void echo(socket, payload).then(() => {
            echoing = false
            seen.echoes++
            echoes++
            if (behaviour.closeAfter && echoes === behaviour.closeAfter.echoes) {
              const code = Buffer.alloc(2)
              code.writeUInt16BE(behaviour.closeAfter.code)
              socket.end(frame(8, code))
            }
          })
        }
      }
    })
    const echo = async (socket: Socket, payload: Buffer) => {
      const whole = frame(1, payload)
      const ping = echoes % 3 === 0 ? frame(9, Buffer.from(`ping ${seen.pings++}`)) : Buffer.alloc(0)
      const pieces = [Buffer.concat([ping, whole.subarray(0, 1)]), whole.subarray(1, 12), whole.subarray(12)]
      for (const [i, piece] of pieces.entries()) {
        if (i > 0) await sleep(1)
        if (socket.destroyed) return
        socket.write(piece)
      }
    }
  })
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve))
  return { port: (server!.address() as { port: number }).port, seen }
}

function runClient(port: number, connections: number): Promise<{ code: number; stdout: string; stderr: string }> {
  const binary = (client as { binary: string }).binary
  return new Promise((resolve) => {
    execFile(binary, [String(port), '/echo', String(connections), '0.1', '0.5'], (error, stdout, stderr) =>
      resolve({ code: error ? Number(error.code) : 0, stdout, stderr }),
    )
  })
}

describe.skipIf('unavailable' in client)('bench/ws-load.c, the native WebSocket load generator', () => {
  it('counts an echo split across reads once, and sends the next frame only after the whole echo', async () => {
    const { port, seen } = await splittingServer()
    const { code, stdout, stderr } = await runClient(port, 3)
    expect(stderr).toBe('')
    expect(code).toBe(0)
    const result = JSON.parse(stdout) as { messages: number; seconds: number; cpuMs: number }
    expect(result.messages).toBeGreaterThan(0)
    expect(result.messages).toBeLessThanOrEqual(seen.echoes)
    expect(result.seconds).toBeGreaterThanOrEqual(0.5)
    expect(result.cpuMs).toBeGreaterThanOrEqual(0)
    expect(seen.badFrames).toEqual([])
    expect(seen.early).toBe(0)
  })

  it('answers a ping that shares a read with an echo, with its payload', async () => {
    const { port, seen } = await splittingServer()
    expect((await runClient(port, 2)).code).toBe(0)
    expect(seen.pings).toBeGreaterThan(0)
    // A pong may still be on its way for pings sent as the run ended.
    expect(seen.pongs.length).toBeGreaterThanOrEqual(seen.pings - 2)
    expect(seen.pongs.every((pong) => /^ping \d+$/.test(pong))).toBe(true)
  })

  it('leaves with a 1000 close frame on every connection', async () => {
    const { port, seen } = await splittingServer()
    expect((await runClient(port, 3)).code).toBe(0)
    expect(seen.closes).toEqual([1000, 1000, 1000])
  })

  it('fails the run, with the code, when the server closes a connection before the end', async () => {
    const { port } = await splittingServer({ closeAfter: { echoes: 5, code: 1011 } })
    const { code, stdout, stderr } = await runClient(port, 2)
    expect(code).toBe(1)
    expect(stdout).toBe('')
    expect(stderr).toMatch(/connection \d: the server closed with 1011 before the end of the run/)
  })

  it('fails with the status line when the handshake is refused', async () => {
    const { port } = await splittingServer({ refuse: 'HTTP/1.1 404 Not Found' })
    const { code, stderr } = await runClient(port, 1)
    expect(code).toBe(1)
    expect(stderr).toContain('handshake refused: HTTP/1.1 404 Not Found')
  })
})
