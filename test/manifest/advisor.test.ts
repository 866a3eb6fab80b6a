import { describe, expect, test } from 'vitest'
import { adviseRoute } from '../../src/manifest.ts'
import { scanRoute } from './_helpers.ts'

/** Scans `source` as a route and returns its advice, signal kinds and signal messages. */
async function advise(source: string) {
  const { route, errors } = await scanRoute(source)
  expect(errors).toEqual([])
  return { advice: adviseRoute(route), signals: route.signals.map((s) => s.kind), reasons: route.signals.map((s) => s.message), route }
}

const handler = `export function GET() { return 'ok' }\n`

describe('listening sockets', () => {
  test.each([
    ['a named import from node:net', `import { createServer } from 'node:net'\ncreateServer(() => {}).listen(9000)\n`, 'net.createServer'],
    ['a default import of http', `import http from 'http'\nconst server = http.createServer()\n`, 'http.createServer'],
    [
      'a namespace import of dgram',
      `import * as dgram from 'node:dgram'\nconst socket = dgram.createSocket('udp4')\n`,
      'dgram.createSocket',
    ],
    ['an http2 secure server', `import { createSecureServer as secure } from 'node:http2'\nsecure({})\n`, 'http2.createSecureServer'],
    ['require()', `const net = require('net')\nrequire('net').createServer()\n`, 'net.createServer'],
    [
      'a server created inside a handler',
      `import https from 'node:https'\nexport function GET() { https.createServer().listen(0) }\n`,
      'https.createServer',
    ],
  ])('%s is a listening socket', async (_, source, label) => {
    const { advice, signals } = await advise(source + handler)
    expect(signals).toContain('listening-socket')
    expect(advice.reasons.join('\n')).toContain(`creates a listening socket with ${label}() (line `)
    expect(advice).toMatchObject({ provider: 'persistent-host', confidence: 'high', severity: 'warn', recommended: { class: 'dedicated' } })
  })

  test('a ws server is a listening socket', async () => {
    const { signals } = await advise(`import { WebSocketServer } from 'ws'\nconst wss = new WebSocketServer({ port: 8080 })\n${handler}`)
    expect(signals).toContain('listening-socket')
  })

  test('a local function that happens to be called createServer is not', async () => {
    const { signals, advice } = await advise(`function createServer() { return {} }\ncreateServer()\n${handler}`)
    expect(signals).toEqual([])
    expect(advice.provider).toBe('edge-worker')
  })

  test('an imported binding shadowed by a parameter is not', async () => {
    const { signals } = await advise(
      `import { createServer } from 'node:http'\nexport function GET(createServer) { return createServer() }\n`,
    )
    expect(signals).toEqual(['node-builtin'])
  })
})

describe('background work at module load', () => {
  test('a module-scope setInterval in a serverless route is a warning with a concrete fix', async () => {
    const { advice, signals } = await advise(`const stats = { hits: 0 }\nsetInterval(() => flush(stats), 60_000)\n${handler}`)
    expect(signals).toEqual(['module-timer'])
    expect(advice.reasons[0]).toBe(
      'starts setInterval at module scope (line 2): the timer runs between requests, which a function freezes or discards',
    )
    expect(advice).toMatchObject({ severity: 'warn', confidence: 'high', provider: 'persistent-host' })
    expect(advice.recommendation).toContain(`move the periodic work into a task route with export const schedule = '<cron>'`)
    expect(advice.nextCommand).toBe('svc routes inspect')
  })

  test('globalThis.setInterval and timers imports count too', async () => {
    const a = await advise(`globalThis.setInterval(() => {}, 1000)\n${handler}`)
    const b = await advise(`import { setInterval as every } from 'node:timers'\nevery(() => {}, 1000)\n${handler}`)
    expect(a.signals).toEqual(['module-timer'])
    expect(b.signals).toContain('module-timer')
  })

  test('a setInterval inside a handler is not module-scope', async () => {
    const { signals } = await advise(`export function GET() { const t = setInterval(() => {}, 10); clearInterval(t) }\n`)
    expect(signals).toEqual([])
  })

  test('an endless loop in an IIFE at load is a background loop', async () => {
    const { signals, advice } = await advise(`;(async () => {\n  while (true) { await tick() }\n})()\n${handler}`)
    expect(signals).toEqual(['background-loop'])
    expect(advice.reasons[0]).toContain('(line 2)')
  })

  test('an endless loop in a function called at load is a background loop', async () => {
    const { signals } = await advise(`async function poll() {\n  for (;;) { await fetchJobs() }\n}\nvoid poll()\n${handler}`)
    expect(signals).toEqual(['background-loop'])
  })

  test('a timer in a function called from a function called at load counts', async () => {
    const { signals } = await advise(
      `function start() { schedule() }\nfunction schedule() { setInterval(() => {}, 1000) }\nstart()\n${handler}`,
    )
    expect(signals).toEqual(['module-timer'])
  })

  test('loops inside handlers, and bounded loops at load, do not count', async () => {
    const { signals } = await advise(
      `for (let i = 0; i < 3; i++) warm(i)\nwhile (queue.length) queue.pop()\nexport function GET() { while (true) { if (done()) break } }\n`,
    )
    expect(signals).toEqual([])
  })

  // Two common spellings of a periodic job are not setInterval: a setTimeout
  // that re-arms itself, and iterating node:timers/promises' setInterval. Both
  // keep working between requests, which a function freezes or discards.
  test.each([
    ['a function that re-arms setTimeout with itself', `function tick() {\n  flush()\n  setTimeout(tick, 1000)\n}\ntick()\n`, 3],
    [
      'an async function that re-arms through an arrow',
      `async function poll() {\n  await pull()\n  setTimeout(() => poll(), 5000)\n}\nvoid poll()\n`,
      3,
    ],
    ['a timers import', `import { setTimeout as later } from 'node:timers'\nfunction beat() {\n  later(beat, 10)\n}\nbeat()\n`, 3],
  ])('%s is a module timer', async (_, source, line) => {
    const { signals, reasons, advice } = await advise(source + handler)
    expect(signals).toEqual(expect.arrayContaining(['module-timer']))
    expect(reasons.find((r) => r.startsWith('re-arms setTimeout'))).toContain(`(line ${line})`)
    expect(advice).toMatchObject({ severity: 'warn', provider: 'persistent-host', confidence: 'high' })
  })

  test('for await over node:timers/promises setInterval at load is a module timer', async () => {
    const { signals, reasons, advice } = await advise(
      `import { setInterval } from 'node:timers/promises'\nfor await (const _ of setInterval(60_000)) {\n  await refresh()\n}\n${handler}`,
    )
    expect(signals).toContain('module-timer')
    expect(reasons).toContain(
      'iterates setInterval from timers/promises at module scope (line 2): the timer runs between requests, which a function freezes or discards',
    )
    expect(advice.severity).toBe('warn')
  })

  test('the same through a namespace import, inside a function called at load', async () => {
    const { signals } = await advise(
      `import * as timers from 'timers/promises'\nasync function every() {\n  for await (const _ of timers.setInterval(1000)) ping()\n}\nevery()\n${handler}`,
    )
    expect(signals).toContain('module-timer')
  })

  test('a one-shot setTimeout at load, or a re-arming one inside a handler, is not', async () => {
    const once = await advise(`setTimeout(() => warm(), 100)\n${handler}`)
    expect(once.signals).toEqual([])
    const inHandler = await advise(`function retry() { setTimeout(retry, 100) }\nexport function GET() { retry() }\n`)
    expect(inHandler.signals).toEqual([])
  })

  test('for await over another iterable at load is not', async () => {
    const { signals } = await advise(
      `import { setInterval } from 'node:timers/promises'\nfor await (const row of readRows()) load(row)\nexport async function GET() { for await (const _ of setInterval(10)) break }\n`,
    )
    expect(signals).toEqual(['node-builtin'])
  })
})

describe('module-scope state', () => {
  test('a let binding changed by a handler is state, with medium confidence', async () => {
    const { advice, signals } = await advise(`let hits = 0\nexport function GET() {\n  hits++\n  return hits\n}\n`)
    expect(signals).toEqual(['mutable-state'])
    expect(advice.reasons[0]).toBe(
      'module-scope hits (let binding, line 1) is changed inside GET (line 3): that state lives only as long as one process',
    )
    expect(advice).toMatchObject({
      severity: 'warn',
      confidence: 'medium',
      provider: 'persistent-host',
      recommended: { class: 'dedicated' },
    })
  })

  test.each([
    ['a Map', `const rooms = new Map()\nexport function POST(req) { rooms.set(req.id, req) }\n`],
    ['a Set reached through a Map', `const rooms = new Map()\nexport function POST(req) { rooms.get('a').add(req) }\n`],
    ['an array', `const log = []\nexport const POST = (req) => { log.push(req) }\n`],
    ['an object property', `const totals = {}\nexport function POST(req) { totals[req.id] = 1 }\n`],
    ['a delete', `const totals = {}\nexport function DELETE(req) { delete totals[req.id] }\n`],
    ['a reassignment', `let current = null\nexport function PUT(req) { current = req }\n`],
  ])('%s changed in a handler is state', async (_, source) => {
    const { signals } = await advise(source)
    expect(signals).toEqual(['mutable-state'])
  })

  test.each([
    [
      'lazy initialization in an if',
      `let client\nfunction db() {\n  if (!client) client = connect()\n  return client\n}\nexport function GET() { return db() }\n`,
    ],
    ['lazy initialization with ??=', `let client\nexport function GET() { client ??= connect(); return client }\n`],
    ['a local that shadows the module binding', `let hits = 0\nexport function GET() { let hits = 1; hits++; return hits }\n`],
    ['a parameter that shadows it', `const cache = new Map()\nexport function GET(cache) { cache.set(1, 2) }\n`],
    ['changes made while the module loads', `const routes = []\nroutes.push('a')\nexport function GET() { return routes }\n`],
    ['reads only', `const table = new Map([[1, 'a']])\nexport function GET() { return table.get(1) }\n`],
  ])('%s is not state', async (_, source) => {
    const { signals } = await advise(source)
    expect(signals).toEqual([])
  })

  test('a hot route with state is dedicated and consistent: info, high confidence', async () => {
    const { advice } = await advise(`const peers = new Set()\nexport function websocket(peer) { peers.add(peer) }\n`)
    expect(advice).toMatchObject({
      kind: 'hot',
      severity: 'info',
      confidence: 'high',
      provider: 'persistent-host',
      current: { class: 'dedicated' },
    })
  })
})

describe('modules', () => {
  test('a heavy module raises the recommended function memory, with a warning', async () => {
    const { advice, signals } = await advise(
      `import sharp from 'sharp'\nexport async function POST(req) { return sharp(await req.arrayBuffer()).webp() }\n`,
    )
    expect(signals).toEqual(['heavy-module'])
    expect(advice).toMatchObject({
      severity: 'warn',
      confidence: 'high',
      provider: 'function-platform',
      current: { class: 'function', memory: '1gb' },
      recommended: { class: 'function', memory: '4gb' },
    })
    expect(advice.recommendation).toBe(`set compute: { class: 'function', memory: '4gb' } in the route export of src/api/route.ts`)
  })

  test('enough declared memory for a heavy module is info', async () => {
    const { advice } = await advise(`import puppeteer from 'puppeteer'\nexport const route = { compute: { memory: '6gb' } }\n${handler}`)
    expect(advice).toMatchObject({ severity: 'info', confidence: 'high', recommended: { class: 'function', memory: '6gb' } })
  })

  test('the largest requirement wins, dynamic imports included', async () => {
    const { advice, signals } = await advise(
      `import ffmpeg from 'fluent-ffmpeg'\nexport async function POST() { const ort = await import('onnxruntime-node') }\n`,
    )
    expect(signals).toEqual(['heavy-module', 'heavy-module'])
    expect(advice.recommended.memory).toBe('8gb')
  })

  test('subpath imports are matched by package', async () => {
    const { signals } = await advise(`import { Canvas } from '@napi-rs/canvas/index.js'\n${handler}`)
    expect(signals).toEqual(['heavy-module'])
  })

  test('type-only imports are not loaded, so they are not signals', async () => {
    const { signals, route } = await advise(`import type { Sharp } from 'sharp'\nimport { type Browser } from 'puppeteer'\n${handler}`)
    expect(signals).toEqual([])
    expect(route.imports).toEqual([])
  })

  test('Node built-ins rule out an edge worker', async () => {
    const { advice, signals } = await advise(`import { createHash } from 'node:crypto'\nimport fs from 'fs'\n${handler}`)
    expect(signals).toEqual(['node-builtin', 'node-builtin'])
    expect(advice).toMatchObject({ provider: 'function-platform', confidence: 'high', severity: 'info' })
  })

  test('native add-ons rule out an edge worker without asking for memory', async () => {
    const { advice, signals } = await advise(`import Database from 'better-sqlite3'\n${handler}`)
    expect(signals).toEqual(['native-module'])
    expect(advice).toMatchObject({ provider: 'function-platform', recommended: { memory: '1gb' } })
  })

  test('a route with no imports can run on an edge worker, with high confidence', async () => {
    const { advice } = await advise(handler)
    expect(advice).toMatchObject({ provider: 'edge-worker', confidence: 'high', severity: 'info' })
  })

  test('imports the scan cannot see into lower the confidence of an edge recommendation', async () => {
    const { advice } = await advise(`import { db } from './_lib/db.ts'\nimport { z } from 'zod'\n${handler}`)
    expect(advice.provider).toBe('edge-worker')
    expect(advice.confidence).toBe('medium')
    expect(advice.reasons.at(-1)).toContain('./_lib/db.ts, zod')
  })
})

describe('declared config against the evidence', () => {
  test('a task timeout beyond what function platforms allow calls for a dedicated host', async () => {
    const { advice } = await advise(`export const route = { kind: 'task', timeout: 3_600_000 }\nexport async function POST() {}\n`)
    expect(advice).toMatchObject({ severity: 'warn', confidence: 'high', provider: 'persistent-host', recommended: { class: 'dedicated' } })
    expect(advice.reasons).toContain('timeout 3600000 ms is longer than function platforms allow (900000 ms, 15 minutes)')
    expect(advice.recommendation).toContain('ctx.step.run')
  })

  test('a timeout of exactly 15 minutes still fits a function', async () => {
    const { advice } = await advise(`export const route = { kind: 'task', timeout: 900_000 }\nexport async function POST() {}\n`)
    expect(advice.recommended.class).toBe('function')
  })

  test('dedicated compute with no evidence gets a function recommendation with low confidence', async () => {
    const { advice } = await advise(`export const route = { compute: { class: 'dedicated', memory: '2gb' } }\n${handler}`)
    expect(advice).toMatchObject({
      severity: 'info',
      confidence: 'low',
      current: { class: 'dedicated', memory: '2gb' },
      recommended: { class: 'function', memory: '1gb' },
    })
  })

  test('a task that exports websocket is told to move it to a hot route', async () => {
    const { advice, route } = await advise(`export const kind = 'task'\nexport async function POST() {}\nexport function websocket() {}\n`)
    expect(advice.severity).toBe('warn')
    expect(advice.recommendation).toBe(
      'tasks are not HTTP endpoints, so the websocket export of src/api/route.ts is never served: move it to its own hot route',
    )
    expect(route.warnings).toContain('tasks are not HTTP endpoints, so the websocket export is never served; move it to a hot route')
  })

  test('advice has the documented shape', async () => {
    const { advice } = await advise(`let n = 0\nexport function GET() { n++ }\n`)
    expect(Object.keys(advice)).toEqual([
      'path',
      'file',
      'kind',
      'current',
      'recommended',
      'provider',
      'confidence',
      'severity',
      'reasons',
      'recommendation',
      'nextCommand',
    ])
    expect(advice.path).toBe('/api/route')
  })

  test('inspect reasons start with how the kind and compute were decided', async () => {
    const { route } = await scanRoute(
      `export const route = { kind: 'task', compute: { class: 'function', memory: '4gb' } }\nexport async function POST() {}\n`,
    )
    expect(route.reasons.slice(0, 2)).toEqual([`route.kind is 'task'`, 'declares compute class function with 4gb'])
    expect(route.provider).toBe('function-platform')
  })
})

describe('the next command', () => {
  const advise = async (source: string, file?: string) => adviseRoute((await scanRoute(source, file)).route)

  test('a task on demand is run with svc tasks run <name>', async () => {
    const advice = await advise(`export const kind = 'task'\nexport async function POST() {}\n`, 'src/api/jobs/notify.ts')
    expect(advice).toMatchObject({ severity: 'info', nextCommand: 'svc tasks run jobs.notify' })
    expect(advice.recommendation).toBeUndefined()
  })

  test('a scheduled task points to svc tasks list, where its schedule shows, whether or not it takes input', async () => {
    const scheduled = `export const kind = 'task'\nexport const schedule = '0 * * * *'\nexport async function POST() {}\n`
    expect((await advise(scheduled, 'src/api/hourly.ts')).nextCommand).toBe('svc tasks list')
    const withInput = `${scheduled}export const input = { '~standard': { version: 1, vendor: 'x', validate: (value: unknown) => ({ value }) } }\n`
    expect((await advise(withInput, 'src/api/hourly.ts')).nextCommand).toBe('svc tasks list')
  })

  test('a task with a warning keeps its fix and is still run with svc tasks run', async () => {
    const advice = await advise(
      `export const route = { kind: 'task', timeout: 3_600_000 }\nexport async function POST() {}\n`,
      'src/api/jobs/export.ts',
    )
    expect(advice.severity).toBe('warn')
    expect(advice.recommendation).toContain('ctx.step.run')
    expect(advice.nextCommand).toBe('svc tasks run jobs.export')
  })

  test('a route other than a task gets svc routes inspect only with a recommendation', async () => {
    expect((await advise(handler)).nextCommand).toBeUndefined()
    expect((await advise(`let n = 0\nexport function GET() { n++ }\n`)).nextCommand).toBe('svc routes inspect')
  })
})

describe('code that does not run at load', () => {
  // Handler bodies are walked only where something in them can be a signal;
  // each case here sits in a body, in a file with nothing else to find.
  test.each([
    ['require()', `export function GET() { return require('node:net') }\n`, ['node-builtin'], ['node:net']],
    [
      'require() spelled with a Unicode escape',
      `export function GET() { return requ\\u0069re('node:net') }\n`,
      ['node-builtin'],
      ['node:net'],
    ],
    [
      'import() with a comment before its parenthesis',
      `export async function GET() { return import /* lazy */ ('sharp') }\n`,
      ['heavy-module'],
      ['sharp'],
    ],
    [
      'a server from a module imported for it',
      `import { createServer } from 'node:http'\nexport const route = { kind: 'hot' }\nexport function GET() { createServer().listen(0) }\n`,
      ['listening-socket', 'node-builtin'],
      ['node:http'],
    ],
    [
      'state changed in a class method',
      `const seen = new Set()\nexport class Cache { add(key) { seen.add(key) } }\n${handler}`,
      ['mutable-state'],
      [],
    ],
  ])('%s in a handler is still found', async (_, source, kinds, imports) => {
    const { signals, route } = await advise(source)
    expect([...signals].sort()).toEqual(kinds)
    expect(route.imports).toEqual(imports)
  })

  test('handlers that only call imported helpers add no signals', async () => {
    const { signals, route } = await advise(
      `import { db } from './_db.ts'\nexport async function GET() {\n  setInterval(() => db.ping(), 1000)\n  for (;;) await db.poll()\n}\n`,
    )
    expect(signals).toEqual([])
    expect(route.imports).toEqual(['./_db.ts'])
  })
})
