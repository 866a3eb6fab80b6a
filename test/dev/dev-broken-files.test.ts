import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { startDevServer, type DevServer } from '../../src/dev/server.ts'
import { recordingLogger, write } from './_helpers.ts'

describe('svc dev while a file is being edited', () => {
  let root: string
  let dev: DevServer | undefined

  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'svc-dev-'))
    await write(root, 'src/api/hello.ts', `export function GET() { return { version: 1 } }\n`)
    await write(root, 'src/api/counter.ts', `let count = 0\nexport function GET() { count++; return { count } }\n`)
    await write(root, 'src/pages/index.ts', `export default function render() { return '<h1>v1</h1>' }\n`)
  })
  afterEach(async () => {
    await dev?.close()
    dev = undefined
    await rm(root, { recursive: true, force: true })
  })

  const get = async (path: string) => {
    const res = await fetch(`${dev!.url}${path}`)
    return { status: res.status, text: await res.text() }
  }

  it('keeps serving the last good version of a route with a syntax error, and prints file:line:col', async () => {
    const logger = recordingLogger()
    dev = await startDevServer({ root, port: 0, host: '127.0.0.1', logger, watch: false })
    // Half-typed: the closing brace is missing.
    await write(root, 'src/api/hello.ts', `export function GET() { return { version: 2 }\n`)
    await dev.reload(['api/hello.ts'])
    expect(dev.errors.map(String)).toEqual([expect.stringMatching(/^src\/api\/hello\.ts:\d+:\d+: /)])
    expect(logger.lines.some(({ text: line }) => /^src\/api\/hello\.ts:\d+:\d+: /.test(line))).toBe(true)
    expect(await get('/api/hello')).toEqual({ status: 200, text: '{"version":1}' })

    await write(root, 'src/api/hello.ts', `export function GET() { return { version: 3 } }\n`)
    await dev.reload(['api/hello.ts'])
    expect(dev.errors).toEqual([])
    expect(await get('/api/hello')).toEqual({ status: 200, text: '{"version":3}' })
  })

  it('keeps serving the last good version of a page with a syntax error', async () => {
    dev = await startDevServer({ root, port: 0, host: '127.0.0.1', logger: recordingLogger(), watch: false })
    await write(root, 'src/pages/index.ts', `export default function render() { return '<h1>v2</h1>'\n`)
    await dev.reload(['pages/index.ts'])
    expect(dev.errors).toHaveLength(1)
    expect(await get('/')).toEqual({ status: 200, text: '<h1>v1</h1>' })
  })

  it('does not import every module again when a folder is created for a new route', async () => {
    dev = await startDevServer({ root, port: 0, host: '127.0.0.1', logger: recordingLogger(), watch: false })
    await get('/api/counter')
    await write(root, 'src/api/reports/daily.ts', `export function GET() { return { daily: true } }\n`)
    // The watcher reports the new folder as well as the file in it.
    await dev.reload(['api/reports', 'api/reports/daily.ts'])
    expect((await get('/api/reports/daily')).status).toBe(200)
    expect(await get('/api/counter')).toEqual({ status: 200, text: '{"count":2}' })
  })

  it('does not import every module again for files no module can import, such as editor backups', async () => {
    dev = await startDevServer({ root, port: 0, host: '127.0.0.1', logger: recordingLogger(), watch: false })
    await get('/api/counter')
    await write(root, 'src/api/hello.ts~', `export function GET() { return { version: 1 } }\n`)
    await write(root, 'src/api/.hello.ts.swp', 'swap')
    await write(root, 'src/notes.md', '# notes\n')
    await dev.reload(['api/hello.ts~', 'api/.hello.ts.swp', 'notes.md'])
    expect(await get('/api/counter')).toEqual({ status: 200, text: '{"count":2}' })
  })

  it('still imports every module again when a shared helper changes', async () => {
    await write(root, 'src/lib/greeting.ts', `export const greeting = 'hi'\n`)
    await write(root, 'src/api/greet.ts', `import { greeting } from '../lib/greeting.ts'\nexport function GET() { return { greeting } }\n`)
    dev = await startDevServer({ root, port: 0, host: '127.0.0.1', logger: recordingLogger(), watch: false })
    await write(root, 'src/lib/greeting.ts', `export const greeting = 'hello'\n`)
    await dev.reload(['lib/greeting.ts'])
    expect(await get('/api/greet')).toEqual({ status: 200, text: '{"greeting":"hello"}' })
  })
})
