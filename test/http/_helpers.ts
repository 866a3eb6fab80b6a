/** Shared helpers of the HTTP suites: real servers on port 0, a recording logger, raw sockets. */
import { randomBytes } from 'node:crypto'
import { connect, type Socket } from 'node:net'
import WebSocket from 'ws'
import { afterEach } from 'vitest'
import { startSvcServer, type SvcServer, type SvcServerOptions } from '../../src/node.ts'
import { type RecordingLogger, recordingLogger } from '../_helpers.ts'

export { type RecordingLogger, recordingLogger, sleep, until } from '../_helpers.ts'

const open = new Set<SvcServer>()

afterEach(async () => {
  await Promise.all([...open].map((server) => server.close()))
  open.clear()
})

export type TestServerOptions = Partial<SvcServerOptions>

/** startSvcServer on an ephemeral port, closed after each test. */
export async function serve(options: TestServerOptions = {}): Promise<SvcServer & { logger: RecordingLogger }> {
  const logger = (options.logger as RecordingLogger | undefined) ?? recordingLogger()
  const server = await startSvcServer({
    apiRoutes: [],
    pages: [],
    port: 0,
    installSignalHandlers: false,
    ...options,
    logger,
  })
  open.add(server)
  return Object.assign(server, { logger })
}

/** A promise with its resolver outside, to hold a handler until the test lets it go. */
export function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void
  const promise = new Promise<T>((r) => (resolve = r))
  return { promise, resolve }
}

export interface RawResponse {
  status: number
  reason: string
  headers: Record<string, string>
  body: string
}

/**
 * A raw keep-alive HTTP/1.1 connection: requests are written as typed and
 * responses parsed as they come, so tests control exactly which request
 * travels on which connection.
 */
export class RawConnection {
  readonly socket: Socket
  #buffer = ''
  /** Methods of the requests sent, in order: a HEAD answer has no body whatever its Content-Length. */
  #methods: string[] = []
  #waiters: (() => void)[] = []
  closed = false

  constructor(port: number) {
    this.socket = connect(port, '127.0.0.1')
    this.socket.setEncoding('latin1')
    this.socket.on('data', (chunk: string) => {
      this.#buffer += chunk
      this.#wake()
    })
    this.socket.on('close', () => {
      this.closed = true
      this.#wake()
    })
    this.socket.on('error', () => {})
  }

  ready(): Promise<void> {
    return new Promise((resolve) => this.socket.once('connect', () => resolve()))
  }

  send(method: string, path: string, headers: Record<string, string> = {}, body = ''): void {
    this.#methods.push(method)
    let head = `${method} ${path} HTTP/1.1\r\nhost: localhost\r\n`
    for (const [k, v] of Object.entries(headers)) head += `${k}: ${v}\r\n`
    if (body) head += `content-length: ${Buffer.byteLength(body)}\r\n`
    this.socket.write(`${head}\r\n${body}`)
  }

  /** The next complete response (content-length framed), or null if the connection closed first. */
  async next(timeoutMs = 5000): Promise<RawResponse | null> {
    const deadline = Date.now() + timeoutMs
    for (;;) {
      const parsed = this.#parse()
      if (parsed) return parsed
      if (this.closed) return null
      if (Date.now() > deadline) throw new Error(`No response within ${timeoutMs} ms; buffered: ${JSON.stringify(this.#buffer)}`)
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, 50)
        this.#waiters.push(() => {
          clearTimeout(timer)
          resolve()
        })
      })
    }
  }

  #wake(): void {
    const waiters = this.#waiters
    this.#waiters = []
    for (const wake of waiters) wake()
  }

  #parse(): RawResponse | null {
    const end = this.#buffer.indexOf('\r\n\r\n')
    if (end === -1) return null
    const [statusLine, ...lines] = this.#buffer.slice(0, end).split('\r\n')
    const headers: Record<string, string> = {}
    for (const line of lines) {
      const i = line.indexOf(':')
      headers[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim()
    }
    const status = Number(statusLine.split(' ')[1])
    const method = this.#methods[0]
    const bodyless = method === 'HEAD' || status === 204 || status === 304
    let body: string
    let consumed: number
    if (!bodyless && headers['transfer-encoding'] === 'chunked') {
      // RFC 9112 §7.1: size line, data, CRLF, until a zero-size chunk.
      body = ''
      let at = end + 4
      for (;;) {
        const lineEnd = this.#buffer.indexOf('\r\n', at)
        if (lineEnd === -1) return null
        const size = Number.parseInt(this.#buffer.slice(at, lineEnd), 16)
        if (size === 0) {
          if (this.#buffer.length < lineEnd + 4) return null
          consumed = lineEnd + 4
          break
        }
        if (this.#buffer.length < lineEnd + 2 + size + 2) return null
        body += this.#buffer.slice(lineEnd + 2, lineEnd + 2 + size)
        at = lineEnd + 2 + size + 2
      }
    } else {
      const length = bodyless ? 0 : Number(headers['content-length'] ?? 0)
      if (this.#buffer.length < end + 4 + length) return null
      body = this.#buffer.slice(end + 4, end + 4 + length)
      consumed = end + 4 + length
    }
    this.#buffer = this.#buffer.slice(consumed)
    this.#methods.shift()
    return { status, headers, body, reason: statusLine.split(' ').slice(2).join(' ') }
  }

  close(): void {
    this.socket.destroy()
  }
}

/** The HTTP status and body a refused WebSocket handshake got; rejects if the handshake is accepted. */
export function refusal(url: string, headers: Record<string, string> = {}): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { headers })
    ws.once('open', () => reject(new Error('the handshake was accepted')))
    ws.once('unexpected-response', (_req, res) => {
      let body = ''
      res.on('data', (chunk) => (body += chunk))
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }))
    })
    ws.once('error', () => {})
  })
}

/**
 * A raw TCP client that completes the WebSocket handshake (RFC 6455 §4.1)
 * and then reads nothing more: what the server sends piles up in its buffers.
 * `early` holds the bytes that came with the handshake answer.
 */
export async function stalledClient(port: number, path: string): Promise<{ socket: Socket; early: Buffer; closed: Promise<void> }> {
  const socket = connect(port, '127.0.0.1')
  socket.on('error', () => {})
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()))
  await new Promise<void>((resolve) => socket.once('connect', () => resolve()))
  const key = randomBytes(16).toString('base64')
  socket.write(
    `GET ${path} HTTP/1.1\r\nhost: localhost\r\nupgrade: websocket\r\nconnection: Upgrade\r\nsec-websocket-key: ${key}\r\nsec-websocket-version: 13\r\n\r\n`,
  )
  let received = Buffer.alloc(0)
  const early = await new Promise<Buffer>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      received = Buffer.concat([received, chunk])
      const end = received.indexOf('\r\n\r\n')
      if (end === -1) return
      socket.off('data', onData)
      socket.pause()
      if (received.subarray(0, 12).toString() === 'HTTP/1.1 101') resolve(received.subarray(end + 4))
      else reject(new Error(`handshake refused: ${received.toString('latin1')}`))
    }
    socket.on('data', onData)
  })
  return { socket, early, closed }
}
