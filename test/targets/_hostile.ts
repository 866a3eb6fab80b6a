/**
 * What a server target does with a hostile client, one set of cases run on
 * the servers built for node, bun and deno: a client that trickles its
 * headers, one that holds an idle keep-alive connection, a WebSocket frame
 * that declares more than the server takes, and a body that declares more
 * than `bodyLimit`. Each case speaks raw TCP, so that it can stop sending
 * where a well-behaved client would go on, and each target's bounds are
 * written once, below, as docs/security.md "Per target" states them.
 */
import { connect, type Socket } from 'node:net'
import { expect, it } from 'vitest'
import { TASK_SECRET } from './contract.ts'

export interface HostileBounds {
  /** Seconds after which a connection still sending header lines is closed, for a target whose bound is short enough to test (Bun's idle timeout). */
  headerSeconds?: number
  /** Header bytes a request may carry, and the status of the answer past them. */
  headerBytes: { limit: number; status: number }
  /** Seconds an idle keep-alive connection is kept, where the target closes it. */
  keepAliveSeconds?: number
  /** The largest frame length refused from its header, before its payload arrives, and how the connection ends. */
  frame: { refusedPast: number; ends: 1009 | 'dropped' }
}

const MIB = 1024 * 1024

/** The bounds each server target holds (docs/security.md "Per target"). */
export const TARGET_BOUNDS: Record<'node' | 'bun' | 'deno', HostileBounds> = {
  // Node's headersTimeout (60 s, checked every 30 s) is too long to wait for here.
  node: { headerBytes: { limit: 16 * 1024, status: 431 }, keepAliveSeconds: 5, frame: { refusedPast: MIB, ends: 1009 } },
  bun: { headerSeconds: 10, headerBytes: { limit: 16 * 1024, status: 431 }, keepAliveSeconds: 10, frame: { refusedPast: MIB, ends: 1009 } },
  // Deno.serve has no header-read or keep-alive timeout, and its WebSocket
  // refuses only a frame past 64 MiB; svc's 1 MiB check runs on the message
  // once Deno has buffered it.
  deno: { headerBytes: { limit: 64 * 1024, status: 400 }, frame: { refusedPast: 64 * MIB, ends: 'dropped' } },
}

interface RawConnection {
  socket: Socket
  /** Everything the server sent so far. */
  received: () => Buffer
  /** Resolves with the milliseconds from `open` once the server closed the connection. */
  closed: Promise<number>
  opened: number
}

function open(base: string): Promise<RawConnection> {
  const url = new URL(base)
  return new Promise((resolve, reject) => {
    const socket = connect(Number(url.port), url.hostname)
    const chunks: Buffer[] = []
    socket.on('data', (chunk) => chunks.push(chunk))
    // A reset is one of the ways a server ends a connection it refuses.
    socket.on('error', () => {})
    const closed = new Promise<number>((done) => socket.once('close', () => done(Date.now() - connection.opened)))
    const connection: RawConnection = { socket, received: () => Buffer.concat(chunks), closed, opened: Date.now() }
    socket.once('connect', () => {
      connection.opened = Date.now()
      resolve(connection)
    })
    socket.once('error', reject)
  })
}

/** The status of the first response the server sent, or `undefined` if it sent none. */
function statusOf(data: Buffer): number | undefined {
  const match = /^HTTP\/1\.1 (\d{3})/.exec(data.toString('latin1'))
  return match ? Number(match[1]) : undefined
}

/** Resolves once `check` holds on what the server sent, or the connection closed, or `ms` passed. */
async function waitFor(connection: RawConnection, check: (data: Buffer) => boolean, ms: number): Promise<void> {
  const deadline = Date.now() + ms
  while (!check(connection.received()) && !connection.socket.closed && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

/** A masked frame header (RFC 6455 §5.2) for a binary frame of `length` bytes, with a zero mask so the payload is sent as is. */
function frameHeader(length: number): Buffer {
  const header = Buffer.alloc(14)
  header[0] = 0x82
  header[1] = 0x80 | 127
  header.writeBigUInt64BE(BigInt(length), 2)
  return header
}

/** The code of the close frame the server sent after the handshake's response, or `undefined`. */
function closeCodeOf(data: Buffer): number | undefined {
  const body = data.indexOf('\r\n\r\n')
  if (body === -1) return undefined
  const frames = data.subarray(body + 4)
  // A close frame of the server (unmasked), with its status code (RFC 6455 §5.5.1).
  return frames[0] === 0x88 && frames.length >= 4 ? frames.readUInt16BE(2) : undefined
}

/**
 * The hostile-client cases, for a started server built for `target`: each
 * opens its own connections, so they run beside the suite's others.
 */
export function hostileClientCases(target: 'node' | 'bun' | 'deno', server: () => { base: string }): void {
  const bounds = TARGET_BOUNDS[target]
  const host = () => new URL(server().base).host

  const { headerSeconds, keepAliveSeconds } = bounds
  if (headerSeconds !== undefined) {
    it(
      `closes a connection that sends a header line a second, unanswered, after about ${headerSeconds} s`,
      async () => {
        const connection = await open(server().base)
        connection.socket.write(`GET /api/hello HTTP/1.1\r\nhost: ${host()}\r\n`)
        let line = 0
        const trickle = setInterval(() => connection.socket.write(`x-line-${line++}: y\r\n`), 1000)
        try {
          const after = await connection.closed
          expect(after).toBeGreaterThan((headerSeconds - 3) * 1000)
          expect(after).toBeLessThan((headerSeconds + 5) * 1000)
          expect(statusOf(connection.received())).toBeUndefined()
        } finally {
          clearInterval(trickle)
        }
      },
      (headerSeconds + 10) * 1000,
    )
  }

  it(`answers ${bounds.headerBytes.status} to headers trickled past ${bounds.headerBytes.limit / 1024} KiB, and closes`, async () => {
    const connection = await open(server().base)
    connection.socket.write(`GET /api/hello HTTP/1.1\r\nhost: ${host()}\r\n`)
    let sent = 0
    const line = `x-pad: ${'y'.repeat(1016)}\r\n`
    const trickle = setInterval(() => {
      if (connection.socket.closed || sent > 4 * bounds.headerBytes.limit) return
      connection.socket.write(line)
      sent += line.length
    }, 2)
    try {
      await waitFor(connection, (data) => statusOf(data) !== undefined, 10_000)
      expect(statusOf(connection.received())).toBe(bounds.headerBytes.status)
      expect(sent).toBeGreaterThan(bounds.headerBytes.limit - 2 * line.length)
      expect(sent).toBeLessThan(bounds.headerBytes.limit + 32 * line.length)
      await connection.closed
    } finally {
      clearInterval(trickle)
    }
  })

  if (keepAliveSeconds !== undefined) {
    it(
      `closes a keep-alive connection left idle for ${keepAliveSeconds} s`,
      async () => {
        const connection = await open(server().base)
        connection.socket.write(`GET /api/hello HTTP/1.1\r\nhost: ${host()}\r\n\r\n`)
        await waitFor(connection, (data) => statusOf(data) !== undefined, 5000)
        expect(statusOf(connection.received())).toBe(200)
        const answered = Date.now()
        await connection.closed
        const idle = Date.now() - answered
        expect(idle).toBeGreaterThan((keepAliveSeconds - 1) * 1000)
        expect(idle).toBeLessThan((keepAliveSeconds + 5) * 1000)
      },
      (keepAliveSeconds + 10) * 1000,
    )
  }

  const { frame } = bounds
  it(`refuses a WebSocket frame declaring over ${frame.refusedPast / MIB} MiB before its payload arrives (${frame.ends === 1009 ? 'close 1009' : 'connection dropped'})`, async () => {
    const connection = await open(server().base)
    connection.socket.write(
      [
        'GET /api/live HTTP/1.1',
        `host: ${host()}`,
        'upgrade: websocket',
        'connection: Upgrade',
        'sec-websocket-key: dGhlIHNhbXBsZSBub25jZQ==',
        'sec-websocket-version: 13',
        '',
        '',
      ].join('\r\n'),
    )
    await waitFor(connection, (data) => data.includes('\r\n\r\n'), 5000)
    expect(statusOf(connection.received())).toBe(101)
    // The header declares one byte past the bound; a sixteenth of a MiB of the payload follows, and no more.
    connection.socket.write(Buffer.concat([frameHeader(frame.refusedPast + 1), Buffer.alloc(64 * 1024)]))
    await waitFor(connection, (data) => closeCodeOf(data) !== undefined, 5000)
    if (frame.ends === 1009) {
      expect(closeCodeOf(connection.received())).toBe(1009)
    } else {
      const gone = await Promise.race([connection.closed, new Promise<number>((resolve) => setTimeout(resolve, 5000, Infinity))])
      expect(gone).toBeLessThan(5000)
      expect(closeCodeOf(connection.received())).toBeUndefined()
    }
    connection.socket.destroy()
  })

  it('answers 413 to a body declared over bodyLimit before it is sent', async () => {
    const connection = await open(server().base)
    connection.socket.write(
      [
        'POST /__tasks/jobs.nap HTTP/1.1',
        `host: ${host()}`,
        `authorization: Bearer ${TASK_SECRET}`,
        'content-type: application/json',
        `content-length: ${2 * MIB}`,
        '',
        '{"pad":"',
      ].join('\r\n'),
    )
    await waitFor(connection, (data) => statusOf(data) !== undefined, 5000)
    expect(statusOf(connection.received())).toBe(413)
    expect(connection.received().toString('latin1')).toContain('PAYLOAD_TOO_LARGE')
    connection.socket.destroy()
  })
}
