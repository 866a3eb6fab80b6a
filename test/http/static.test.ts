import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { RawConnection, recordingLogger, serve } from './_helpers.ts'

let root: string
let first: string
let second: string

beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'svc-static-'))
  first = join(root, 'public')
  second = join(root, 'dist')
  mkdirSync(join(first, 'docs'), { recursive: true })
  mkdirSync(join(first, '.git'), { recursive: true })
  mkdirSync(second, { recursive: true })
  writeFileSync(join(first, 'index.html'), '<h1>home</h1>')
  writeFileSync(join(first, 'about.html'), '<h1>about</h1>')
  writeFileSync(join(first, 'docs', 'index.html'), '<h1>docs</h1>')
  writeFileSync(join(first, 'shared.txt'), 'from public')
  writeFileSync(join(first, 'app.js'), 'console.log(1)')
  writeFileSync(join(first, 'style.css'), 'body{}')
  writeFileSync(join(first, 'data.json'), '{"a":1}')
  writeFileSync(join(first, 'logo.svg'), '<svg/>')
  writeFileSync(join(first, 'api-shadow.txt'), 'static')
  writeFileSync(join(first, '.env'), 'SECRET=1')
  writeFileSync(join(first, '.git', 'config'), 'secret')
  writeFileSync(join(second, 'shared.txt'), 'from dist')
  writeFileSync(join(second, 'only-dist.txt'), 'dist only')
  writeFileSync(join(root, 'secret.txt'), 'outside the static dirs')
})

afterAll(() => rmSync(root, { recursive: true, force: true }))

const start = () =>
  serve({
    staticDirs: [first, second],
    apiRoutes: [{ path: '/api-shadow.txt', module: { GET: () => 'route wins' } }],
  })

describe('static files', () => {
  it('tries the directories in order', async () => {
    const server = await start()
    expect(await (await fetch(`${server.url}/shared.txt`)).text()).toBe('from public')
    expect(await (await fetch(`${server.url}/only-dist.txt`)).text()).toBe('dist only')
  })

  it('lets routes win over files', async () => {
    const server = await start()
    expect(await (await fetch(`${server.url}/api-shadow.txt`)).json()).toBe('route wins')
  })

  it('serves index.html for directories and .html for extensionless paths', async () => {
    const server = await start()
    expect(await (await fetch(`${server.url}/`)).text()).toBe('<h1>home</h1>')
    expect(await (await fetch(`${server.url}/about`)).text()).toBe('<h1>about</h1>')
    expect(await (await fetch(`${server.url}/docs/`)).text()).toBe('<h1>docs</h1>')
  })

  it('sets content types from the extension', async () => {
    const server = await start()
    const type = async (path: string) => (await fetch(`${server.url}${path}`)).headers.get('content-type')
    expect(await type('/index.html')).toBe('text/html; charset=utf-8')
    expect(await type('/app.js')).toBe('text/javascript; charset=utf-8')
    expect(await type('/style.css')).toBe('text/css; charset=utf-8')
    expect(await type('/data.json')).toBe('application/json')
    expect(await type('/logo.svg')).toBe('image/svg+xml')
    expect(await type('/shared.txt')).toBe('text/plain; charset=utf-8')
  })

  it('answers a matching If-None-Match or If-Modified-Since with 304 and no body', async () => {
    const server = await start()
    const res = await fetch(`${server.url}/shared.txt`)
    const etag = res.headers.get('etag')!
    const modified = res.headers.get('last-modified')!
    expect(etag).toMatch(/^W\/".+"$/)
    expect(modified).toBeTruthy()
    const byTag = await fetch(`${server.url}/shared.txt`, { headers: { 'if-none-match': etag } })
    expect(byTag.status).toBe(304)
    expect(await byTag.text()).toBe('')
    const byDate = await fetch(`${server.url}/shared.txt`, { headers: { 'if-modified-since': modified } })
    expect(byDate.status).toBe(304)
    const stale = await fetch(`${server.url}/shared.txt`, { headers: { 'if-none-match': 'W/"other"' } })
    expect(stale.status).toBe(200)
  })

  it('answers HEAD with the headers of GET and no body', async () => {
    const server = await start()
    const conn = new RawConnection(server.port)
    await conn.ready()
    conn.send('HEAD', '/shared.txt')
    const res = await conn.next()
    expect(res!.status).toBe(200)
    expect(res!.reason).toBe('OK')
    expect(res!.headers['content-type']).toBe('text/plain; charset=utf-8')
    expect(res!.headers['content-length']).toBe('11')
    expect(res!.body).toBe('')
    // The connection stays usable: no stray body bytes were sent after the head.
    conn.send('GET', '/only-dist.txt')
    expect((await conn.next())!.body).toBe('dist only')
    conn.close()
  })

  it('never serves a file outside the directories, however the path is written', async () => {
    const server = await start()
    for (const path of [
      '/../secret.txt',
      '/%2e%2e/secret.txt',
      '/%2E%2E/secret.txt',
      '/docs/../../secret.txt',
      '/docs/%2e%2e/%2e%2e/secret.txt',
      '/..%2fsecret.txt',
      '/%2e%2e%2fsecret.txt',
      '/..%5csecret.txt',
      '/%252e%252e/secret.txt',
    ]) {
      // A raw socket sends the path exactly as written; fetch would normalize it first.
      const conn = new RawConnection(server.port)
      await conn.ready()
      conn.send('GET', path)
      const res = await conn.next()
      conn.close()
      expect(res?.body ?? '', path).not.toContain('outside the static dirs')
      expect([400, 404], path).toContain(res?.status)
    }
  })

  it('does not serve dot files', async () => {
    const server = await start()
    expect((await fetch(`${server.url}/.env`)).status).toBe(404)
    expect((await fetch(`${server.url}/.git/config`)).status).toBe(404)
  })

  it('only answers GET and HEAD from files', async () => {
    const server = await start()
    expect((await fetch(`${server.url}/shared.txt`, { method: 'POST' })).status).toBe(404)
  })

  it('warns about a directory that does not exist', async () => {
    const logger = recordingLogger()
    await serve({ staticDirs: [join(root, 'missing')], logger })
    expect(logger.text()).toContain('is not a directory')
  })
})
