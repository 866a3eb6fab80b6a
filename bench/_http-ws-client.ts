/**
 * A WebSocket echo load generator for `bench/http.ts`, one per child process,
 * used when the native one (bench/ws-load.c) cannot be compiled:
 *
 *   node bench/_http-ws-client.ts <port> <path> <connections> <warmup s> <seconds>
 *
 * Each connection plays ping-pong: it sends one 32-byte text frame, waits for
 * the echo, sends the next. The client speaks the protocol on a bare TCP
 * socket with one precomputed masked frame and counts echoes by their fixed
 * size (RFC 6455 §5.2: a server frame of 32 bytes is 2 header bytes plus the
 * payload), so it does far less work per message than any server it drives.
 * After the warm-up it counts for `seconds` and prints one JSON line:
 * `{ messages, seconds, cpuMs }`, its own CPU time over the counted window.
 */
import { randomBytes } from 'node:crypto'
import { connect, type Socket } from 'node:net'

const [port, path, connections, warmup, seconds] = [
  Number(process.argv[2]),
  process.argv[3],
  Number(process.argv[4]),
  Number(process.argv[5]),
  Number(process.argv[6]),
]
const PAYLOAD = 32
const ECHO_BYTES = 2 + PAYLOAD

// FIN + text opcode, MASK bit + length, the 4-byte key, the masked payload.
const key = randomBytes(4)
const frame = Buffer.alloc(2 + 4 + PAYLOAD)
frame[0] = 0x81
frame[1] = 0x80 | PAYLOAD
key.copy(frame, 2)
for (let i = 0; i < PAYLOAD; i++) frame[6 + i] = 0x78 ^ key[i % 4]

// A close frame (opcode 8) with an empty masked payload: the clients leave cleanly, not by a reset.
const closeFrame = Buffer.from([0x88, 0x80, ...key])

let counting = false
let stopping = false
let messages = 0

function open(): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1')
    socket.setNoDelay(true)
    socket.once('error', reject)
    socket.once('connect', () => {
      socket.write(
        `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
          `Sec-WebSocket-Key: ${randomBytes(16).toString('base64')}\r\nSec-WebSocket-Version: 13\r\n\r\n`,
      )
    })
    let head = ''
    const onHead = (chunk: Buffer) => {
      head += chunk.toString('latin1')
      const end = head.indexOf('\r\n\r\n')
      if (end === -1) return
      if (!head.startsWith('HTTP/1.1 101')) return reject(new Error(`handshake refused: ${head.split('\r\n')[0]}`))
      socket.off('data', onHead)
      let pending = head.length - end - 4
      socket.on('data', (data: Buffer) => {
        pending += data.length
        while (pending >= ECHO_BYTES) {
          pending -= ECHO_BYTES
          if (counting) messages++
          if (!stopping) socket.write(frame)
        }
      })
      resolve(socket)
    }
    socket.on('data', onHead)
  })
}

const sockets = await Promise.all(Array.from({ length: connections }, open))
for (const socket of sockets) socket.write(frame)
await new Promise((resolve) => setTimeout(resolve, warmup * 1000))
const cpu = process.cpuUsage()
const start = performance.now()
counting = true
await new Promise((resolve) => setTimeout(resolve, seconds * 1000))
counting = false
const used = process.cpuUsage(cpu)
const elapsed = (performance.now() - start) / 1000
process.stdout.write(`${JSON.stringify({ messages, seconds: elapsed, cpuMs: (used.user + used.system) / 1000 })}\n`)
stopping = true
await Promise.race([
  Promise.all(sockets.map((socket) => new Promise((resolve) => socket.end(closeFrame).once('close', resolve)))),
  new Promise((resolve) => setTimeout(resolve, 2_000)),
])
process.exit(0)
