/**
 * The HTTP surface under random and mutated requests: methods, paths,
 * headers, bodies, framings and the pieces the bytes arrive in, sent over
 * raw sockets to a real server in a child process (routes, a hot route, a
 * task, pages, static files, the dashboard, the task admin surface and the
 * revalidate endpoint), once behind a secret and once in development mode.
 *
 * Whatever it is sent, the server answers below 500 within a few seconds,
 * its process stays up, and its heap after a collection comes back to where
 * it was once the surface was warm.
 *
 * The seed is fixed, so CI tries the same requests every time. A longer run
 * (SVC_FUZZ_LOG=1 prints each request and its answer):
 *   SVC_FUZZ_RUNS=50000 SVC_FUZZ_SEED=7 npx vitest run test/http/fuzz.test.ts
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { connect } from 'node:net'
import { fileURLToPath } from 'node:url'
import fc from 'fast-check'
import { afterAll, describe, expect, it } from 'vitest'
import { until } from './_helpers.ts'

const RUNS = Number(process.env.SVC_FUZZ_RUNS ?? 1500)
const SEED = Number(process.env.SVC_FUZZ_SEED ?? 20261126)
// A request whose head has not come back by then counts as a hang.
const ANSWER_MS = 10_000
/** The task secret of the fixture server (../fixtures/fuzz-server/server.ts). */
const SECRET = 't'.repeat(32)
// How far the heap may stand above its warm level after the run: the
// surface's caches are bounded, and what a request leaves behind is not.
const HEAP_SLACK_BYTES = 16 * 1024 * 1024

const children: ChildProcess[] = []
afterAll(() => {
  for (const child of children) child.kill('SIGKILL')
})

async function startServer(mode: 'secret' | 'dev'): Promise<{ port: number; child: ChildProcess; stderr: () => string }> {
  const script = fileURLToPath(new URL('../fixtures/fuzz-server/server.ts', import.meta.url))
  const child = spawn(process.execPath, ['--expose-gc', script], {
    env: { ...process.env, FUZZ_MODE: mode },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  children.push(child)
  let out = ''
  let err = ''
  child.stdout!.on('data', (c) => (out += c))
  child.stderr!.on('data', (c) => (err += c))
  const port = Number(await until(() => /port (\d+)/.exec(out)?.[1], 60_000))
  return { port, child, stderr: () => err }
}

interface Fuzzed {
  method: string
  target: string
  headers: [string, string][]
  body: Uint8Array
  framing: 'length' | 'chunked' | 'none' | 'short-length' | 'both'
  chunks: number[]
  pieces: number[]
}

const PATHS = [
  '/',
  '/__health',
  '/api/items/1',
  '/api/items/x',
  '/api/echo',
  '/api/files/a/b/c',
  '/api/live',
  '/api/jobs/noop',
  '/posts',
  '/about',
  '/hello.txt',
  '/__tasks',
  '/__tasks/jobs.noop',
  '/__tasks/nope',
  '/__tasks/runs',
  '/__tasks/runs/x/cancel',
  '/__tasks/runs/x/replay',
  '/__tasks/events',
  '/__tasks/tokens/abc',
  '/__svc/dashboard',
  '/__svc/dashboard/tasks',
  '/__svc/revalidate',
  '/__events/order.paid',
  '/../etc/passwd',
  '/%2e%2e/%2e%2e/secret',
  '/api/%ZZ',
  '/api/%00',
  '/api/items/%F0%9F%98%80',
  '//api//items//1//',
  '/api/items/1/../2',
  '/ünïcode',
]

// Characters a mutation inserts into a path or query, the awkward ones weighted in.
const pathChar = fc.oneof(
  fc.constantFrom('/', '%', '.', '?', '#', '&', '=', ';', '%2F', '%2e', '%00', '%ff', '%u0041', '\\', '~', '*', ':', '@', '[', ']'),
  fc.string({ minLength: 1, maxLength: 3 }),
  fc.string({ unit: 'grapheme', minLength: 1, maxLength: 2 }),
)

const target = fc
  .tuple(
    fc.constantFrom(...PATHS),
    fc.array(pathChar, { maxLength: 12 }),
    fc.option(
      fc.array(
        fc.oneof(
          fc.constantFrom('verbose=yes', 'verbose=maybe', 'cursor=', 'limit=99999', 'status=running', 'task=jobs.noop'),
          fc.string({ maxLength: 10 }),
        ),
        { maxLength: 4 },
      ),
    ),
    fc.oneof({ weight: 9, arbitrary: fc.constant(0) }, { weight: 1, arbitrary: fc.integer({ min: 1, max: 20_000 }) }),
  )
  .map(([path, extra, query, repeat]) => {
    let t = path + extra.join('') + (repeat ? `${'/'.repeat(repeat)}x` : '')
    if (query) t += `?${query.join('&')}`
    // The request line holds no blanks or line breaks: those are what a mutation would split it at.
    return encodeURI(t).replace(/%25/g, '%')
  })

const headerPairs: fc.Arbitrary<[string, string]>[] = [
  fc.tuple(
    fc.constant('host'),
    fc.constantFrom(
      '127.0.0.1',
      'localhost',
      'app.localhost:3000',
      '[::1]:1',
      'evil.example',
      'rebind.attacker.example:80',
      '',
      'a'.repeat(300),
    ),
  ),
  fc.tuple(
    fc.constant('content-type'),
    fc.constantFrom(
      'application/json',
      'application/json; charset=utf-8',
      'application/vnd.api+json',
      'text/plain',
      'text/plain;charset=UTF-8',
      'application/x-www-form-urlencoded',
      'multipart/form-data; boundary=x',
      'application/json; charset=utf-16',
      'garbage',
      '',
    ),
  ),
  fc.tuple(
    fc.constant('authorization'),
    fc.constantFrom(
      `Bearer ${SECRET}`,
      'Bearer x',
      `bearer ${SECRET}`,
      'Basic dDp0',
      'Bearer',
      `Bearer \t ${SECRET} \t`,
      '',
      `Bearer ${' '.repeat(3000)}${SECRET}`,
    ),
  ),
  fc.tuple(fc.constant('origin'), fc.constantFrom('http://127.0.0.1:3000', 'http://localhost:1', 'https://evil.example', 'null', '')),
  fc.tuple(fc.constant('sec-fetch-site'), fc.constantFrom('same-origin', 'same-site', 'cross-site', 'none', 'bogus')),
  fc.tuple(
    fc.constantFrom('x-forwarded-for', 'forwarded', 'x-forwarded-proto', 'x-forwarded-host'),
    fc.constantFrom('127.0.0.1', 'for=1.2.3.4', 'https', 'evil.example'),
  ),
  fc.tuple(fc.constant('accept'), fc.constantFrom('text/event-stream', 'application/json', 'text/html', '*/*')),
  fc.tuple(
    fc.constantFrom('accept-encoding', 'content-encoding'),
    fc.constantFrom('gzip', 'br', 'deflate', 'zstd', 'identity', 'gzip, gzip'),
  ),
  fc.tuple(fc.constant('expect'), fc.constantFrom('100-continue', 'nothing')),
  fc.tuple(fc.constant('idempotency-key'), fc.string({ maxLength: 40 })),
  fc.tuple(fc.constant('svc-delay-seconds'), fc.constantFrom('0', '1', '-1', '1e9', 'NaN', '0.5', 'x')),
  fc.tuple(fc.constant('svc-priority'), fc.constantFrom('0', '1000', '-1000', '1001', '-0', '1.5', 'high', '99999999999')),
  fc.tuple(fc.constant('if-none-match'), fc.constantFrom('*', '"x"', 'W/"y"')),
  fc.tuple(fc.constant('range'), fc.constantFrom('bytes=0-1', 'bytes=5-2', 'bytes=-1', 'lines=1-2')),
  fc.tuple(fc.constant('cookie'), fc.string({ maxLength: 50 })),
  fc.tuple(
    fc.stringMatching(/^[a-z][a-z0-9-]{0,20}$/),
    fc.string({ maxLength: 40 }).map((s) => s.replace(/[\r\n\0]/g, '')),
  ),
]

const upgrade: [string, string][] = [
  ['connection', 'Upgrade'],
  ['upgrade', 'websocket'],
  ['sec-websocket-version', '13'],
  ['sec-websocket-key', 'dGhlIHNhbXBsZSBub25jZQ=='],
]

const text = (s: string) => new TextEncoder().encode(s)

const body = fc.oneof(
  { weight: 4, arbitrary: fc.constant(new Uint8Array()) },
  { weight: 3, arbitrary: fc.jsonValue({ maxDepth: 4 }).map((value) => text(JSON.stringify(value) ?? 'null')) },
  { weight: 2, arbitrary: fc.record({ name: fc.string(), tags: fc.array(fc.string()) }).map((value) => text(JSON.stringify(value))) },
  {
    weight: 1,
    arbitrary: fc.record({ paths: fc.array(fc.string()), tags: fc.array(fc.string()) }).map((value) => text(JSON.stringify(value))),
  },
  { weight: 1, arbitrary: fc.uint8Array({ maxLength: 300 }) },
  { weight: 1, arbitrary: fc.integer({ min: 1, max: 5000 }).map((n) => text('['.repeat(n) + ']'.repeat(n))) },
  { weight: 1, arbitrary: fc.string({ maxLength: 200 }).map((s) => text(`{"n": ${s}`)) },
  { weight: 1, arbitrary: fc.constant(text(`"${'x'.repeat(1024 * 1024 + 10)}"`)) },
)

const wild: fc.Arbitrary<Fuzzed> = fc.record({
  method: fc.oneof(
    { weight: 8, arbitrary: fc.constantFrom('GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS') },
    { weight: 1, arbitrary: fc.constantFrom('TRACE', 'PROPFIND', 'get', 'BREW', 'M-SEARCH') },
  ),
  target,
  headers: fc
    .tuple(
      fc.array(fc.oneof(...headerPairs), { maxLength: 8 }),
      fc.boolean().map((yes) => (yes ? upgrade : [])),
      fc.nat(20),
    )
    .map(([pairs, up, n]) => (n === 0 ? [...pairs, ...up] : pairs)),
  body,
  framing: fc.constantFrom('length', 'length', 'length', 'chunked', 'chunked', 'none', 'short-length', 'both'),
  chunks: fc.array(fc.integer({ min: 1, max: 64 }), { minLength: 1, maxLength: 6 }),
  pieces: fc.array(fc.integer({ min: 1, max: 200 }), { maxLength: 6 }),
})

// A request a client of the surface would send, with at most two things off:
// these reach the handlers behind the auth and body checks.
const plausible: fc.Arbitrary<Fuzzed> = fc.record({
  method: fc.constantFrom('GET', 'POST', 'POST', 'HEAD', 'DELETE'),
  target: fc
    .tuple(
      fc.constantFrom(...PATHS.slice(0, 23)),
      fc.option(fc.constantFrom('?verbose=yes', '?limit=5', '?status=completed&task=jobs.noop', '?cursor=zz')),
    )
    .map(([path, query]) => path + (query ?? '')),
  headers: fc
    .array(fc.oneof(...headerPairs), { maxLength: 2 })
    .map((extra): [string, string][] => [['content-type', 'application/json'], ['authorization', `Bearer ${SECRET}`], ...extra]),
  body: fc.oneof(
    fc.constant(text('{}')),
    fc.record({ n: fc.integer() }).map((value) => text(JSON.stringify(value))),
    fc.record({ name: fc.string({ minLength: 1 }), tags: fc.array(fc.string()) }).map((value) => text(JSON.stringify(value))),
    fc.record({ paths: fc.array(fc.constantFrom('/posts', '/about', '/posts?x=1')) }).map((value) => text(JSON.stringify(value))),
    body,
  ),
  framing: fc.constantFrom('length', 'length', 'chunked'),
  chunks: fc.array(fc.integer({ min: 1, max: 64 }), { minLength: 1, maxLength: 6 }),
  pieces: fc.array(fc.integer({ min: 1, max: 200 }), { maxLength: 6 }),
})

const request = fc.oneof(wild, plausible)

/** The bytes of `r` on the wire, framed as it says (a framing may be wrong on purpose, never one that leaves the server waiting for bytes that will not come). */
function wire(r: Fuzzed): Buffer {
  const lines = [`${r.method} ${r.target} HTTP/1.1`]
  const hasHost = r.headers.some(([name]) => name === 'host')
  if (!hasHost) lines.push('host: 127.0.0.1')
  for (const [name, value] of r.headers) lines.push(`${name}: ${value}`)
  lines.push('connection: close')
  let payload: Buffer = Buffer.from(r.body)
  if (r.framing === 'length' || r.framing === 'both') lines.push(`content-length: ${payload.length}`)
  if (r.framing === 'short-length') lines.push(`content-length: ${Math.floor(payload.length / 2)}`)
  if (r.framing === 'chunked' || r.framing === 'both') {
    lines.push('transfer-encoding: chunked')
    const parts: Buffer[] = []
    let at = 0
    for (let i = 0; at < payload.length; i++) {
      const size = Math.min(r.chunks[i % r.chunks.length], payload.length - at)
      parts.push(Buffer.from(`${size.toString(16)}\r\n`), payload.subarray(at, at + size), Buffer.from('\r\n'))
      at += size
    }
    parts.push(Buffer.from('0\r\n\r\n'))
    payload = Buffer.concat(parts)
  }
  if (r.framing === 'none') payload = Buffer.alloc(0)
  return Buffer.concat([Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'latin1'), payload])
}

/**
 * Sends the bytes in the pieces `r` names, and resolves to the status of the
 * first final answer (a 100 Continue is skipped), or to 'closed' when the
 * server closed the connection without one. Rejects when no answer comes in
 * time. The connection is dropped once the head is read: an event stream or
 * a WebSocket would never end on its own.
 */
function exchange(port: number, r: Fuzzed): Promise<number | 'closed'> {
  const bytes = wire(r)
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1')
    let received = ''
    const timer = setTimeout(() => {
      socket.destroy()
      reject(new Error(`no answer within ${ANSWER_MS} ms to ${r.method} ${r.target.slice(0, 200)}`))
    }, ANSWER_MS)
    const settle = (value: number | 'closed') => {
      clearTimeout(timer)
      socket.destroy()
      resolve(value)
    }
    socket.on('data', (chunk) => {
      received += chunk.toString('latin1')
      for (;;) {
        const end = received.indexOf('\r\n\r\n')
        if (end === -1) return
        const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(received)?.[1])
        if (status !== 100) return settle(status)
        received = received.slice(end + 4)
      }
    })
    socket.on('error', () => {})
    socket.on('close', () => settle('closed'))
    socket.on('connect', async () => {
      let at = 0
      for (const size of r.pieces) {
        if (at >= bytes.length || socket.destroyed) break
        socket.write(bytes.subarray(at, at + size))
        at += size
        await new Promise((next) => setImmediate(next))
      }
      if (at < bytes.length && !socket.destroyed) socket.write(bytes.subarray(at))
    })
  })
}

async function heapUsed(port: number): Promise<number> {
  const res = await fetch(`http://127.0.0.1:${port}/api/__heap`)
  return ((await res.json()) as { heapUsed: number }).heapUsed
}

describe.each(['secret', 'dev'] as const)('the HTTP surface under fuzzed requests (%s mode)', (mode) => {
  it(`answers ${RUNS} random and mutated requests below 500, stays up, and gives its memory back`, async () => {
    const { port, child, stderr } = await startServer(mode)
    const statuses = new Map<number | 'closed', number>()
    const run = (runs: number, seed: number) =>
      fc.assert(
        fc.asyncProperty(request, async (r) => {
          const status = await exchange(port, r)
          statuses.set(status, (statuses.get(status) ?? 0) + 1)
          if (process.env.SVC_FUZZ_LOG)
            console.log(status, r.method, r.target.slice(0, 100), JSON.stringify(r.headers).slice(0, 300), r.framing)
          if (status !== 'closed' && status >= 500) throw new Error(`${status} for ${r.method} ${r.target.slice(0, 200)}`)
        }),
        { numRuns: runs, seed, endOnFailure: true },
      )
    // A first pass warms what the surface keeps by design (compiled routes, the page cache).
    await run(Math.min(300, RUNS), SEED + 1)
    const warm = await heapUsed(port)
    await run(RUNS, SEED)
    const after = await heapUsed(port)
    const summary = [...statuses].sort(([a], [b]) => String(a).localeCompare(String(b))).map(([s, n]) => `${s}: ${n}`)
    console.log(
      `fuzz (${mode}): ${RUNS + Math.min(300, RUNS)} requests, seed ${SEED}; ${summary.join(', ')}; heap ${warm} → ${after} bytes`,
    )
    expect(child.exitCode).toBe(null)
    expect((await fetch(`http://127.0.0.1:${port}/__health`)).status).toBe(200)
    expect(after - warm).toBeLessThan(HEAP_SLACK_BYTES)
    expect(stderr()).toBe('')
  }, 600_000)
})
