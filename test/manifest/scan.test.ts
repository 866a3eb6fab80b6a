import { fileURLToPath } from 'node:url'
import { describe, expect, test } from 'vitest'
import { ConfigError, ManifestError, assertNoConfigErrors, scanApp, scanFile } from '../../src/manifest.ts'
import { compareUrlPaths, isSourceFile, urlFromFile } from '../../src/manifest/paths.ts'

const fixture = (name: string) => fileURLToPath(new URL(`../fixtures/${name}`, import.meta.url))

describe('file-based paths', () => {
  test.each([
    ['index.ts', '/api'],
    ['users/index.ts', '/api/users'],
    ['users.ts', '/api/users'],
    ['users/[id].ts', '/api/users/:id'],
    ['files/[...path].ts', '/api/files/:path*'],
    ['(admin)/stats.ts', '/api/stats'],
    ['(admin)/(reports)/daily/index.mjs', '/api/daily'],
    ['jobs/notify.js', '/api/jobs/notify'],
    ['v1/[org]/[repo]/issues.mts', '/api/v1/:org/:repo/issues'],
  ])('%s maps to %s', (file, path) => {
    expect(urlFromFile(file, '/api')).toEqual({ ok: true, path })
  })

  test('pages map without the /api prefix', () => {
    expect(urlFromFile('index.ts', '')).toEqual({ ok: true, path: '/' })
    expect(urlFromFile('about.ts', '')).toEqual({ ok: true, path: '/about' })
    expect(urlFromFile('blog/[slug].ts', '')).toEqual({ ok: true, path: '/blog/:slug' })
  })

  test.each([
    ['[...rest]/more.ts', 'catch-all segment [...rest] must be the last part of the path'],
    ['[id]/[id].ts', 'parameter "id" appears twice in the path'],
    ['[item-id].ts', 'path segment "[item-id]" is not a valid parameter; write [name] or [...name]'],
  ])('%s is rejected', (file, message) => {
    expect(urlFromFile(file, '/api')).toEqual({ ok: false, message })
  })

  test.each([
    ['route.ts', true],
    ['route.mts', true],
    ['route.js', true],
    ['route.mjs', true],
    ['route.tsx', false],
    ['route.json', false],
    ['types.d.ts', false],
    ['types.d.mts', false],
    ['route.test.ts', false],
    ['route.spec.mjs', false],
    ['_helper.ts', false],
  ])('%s is a source file: %s', (name, expected) => {
    expect(isSourceFile(name)).toBe(expected)
  })

  test('static segments sort before parameters, parameters before catch-alls', () => {
    const paths = ['/api/:rest*', '/api/users/:id', '/api/users', '/api/:id', '/api', '/api/users/me', '/api/a']
    expect([...paths].sort(compareUrlPaths)).toEqual([
      '/api',
      '/api/a',
      '/api/users',
      '/api/users/me',
      '/api/users/:id',
      '/api/:id',
      '/api/:rest*',
    ])
  })
})

describe('scanApp on a fixture app with every route kind', () => {
  test('finds every route, sorted by path, and skips private, test, spec and declaration files', async () => {
    const result = await scanApp({ root: fixture('app-basic') })
    expect(result.errors).toEqual([])
    expect(result.root).toBe(fixture('app-basic'))
    expect(result.routes.map((r) => [r.path, r.file])).toEqual([
      ['/api', 'src/api/index.ts'],
      ['/api/chat', 'src/api/chat.ts'],
      ['/api/counter', 'src/api/counter.ts'],
      ['/api/files/:path*', 'src/api/files/[...path].ts'],
      ['/api/health', 'src/api/health.mjs'],
      ['/api/jobs/notify', 'src/api/jobs/notify.ts'],
      ['/api/live/room', 'src/api/live/room.ts'],
      ['/api/report', 'src/api/report.ts'],
      ['/api/stats', 'src/api/(admin)/stats.ts'],
      ['/api/users', 'src/api/users/index.ts'],
      ['/api/users/:id', 'src/api/users/[id].ts'],
    ])
  })

  test('reports each route kind with its normalized config', async () => {
    const { routes } = await scanApp({ root: fixture('app-basic') })
    const byPath = Object.fromEntries(routes.map((r) => [r.path, r]))

    expect(byPath['/api/report']).toMatchObject({
      kind: 'task',
      name: 'report',
      methods: ['POST'],
      schedule: '30 2 * * *',
      timezone: 'Europe/Berlin',
      retries: 2,
      timeout: 120000,
      hasInput: true,
      compute: { class: 'function', memory: '1gb', cpu: null },
      warnings: [],
    })
    expect(byPath['/api/jobs/notify']).toMatchObject({ kind: 'task', name: 'jobs.notify', retries: 0, timeout: 30000, schedule: null })
    expect(byPath['/api/chat']).toMatchObject({
      kind: 'hot',
      name: null,
      websocket: true,
      methods: ['GET'],
      origins: ['https://app.example.com', 'http://localhost:3000', 'https://example.com'],
      compute: { class: 'dedicated', memory: null, cpu: null, machine: { memoryMb: null, cpus: null } },
      provider: 'persistent-host',
      retries: null,
      timeout: null,
    })
    expect(byPath['/api/live/room'].compute).toEqual({ class: 'dedicated', memory: '2gb', cpu: 2, machine: { memoryMb: 2048, cpus: 2 } })
    expect(byPath['/api/stats'].compute).toEqual({ class: 'function', memory: '4gb', cpu: null })
    expect(byPath['/api/users/:id']).toMatchObject({ kind: 'serverless', methods: ['GET'], hasSchema: true })
    expect(byPath['/api/health'].methods).toEqual(['GET', 'HEAD'])
    expect(byPath['/api'].provider).toBe('edge-worker')
  })

  test('every manifest entry has the documented fields', async () => {
    const { routes } = await scanApp({ root: fixture('app-basic') })
    for (const route of routes) {
      expect(Object.keys(route)).toEqual(
        expect.arrayContaining([
          'path',
          'file',
          'kind',
          'name',
          'methods',
          'websocket',
          'schedule',
          'timezone',
          'retries',
          'timeout',
          'origins',
          'hasInput',
          'hasSchema',
          'compute',
          'provider',
          'confidence',
          'reasons',
          'warnings',
        ]),
      )
      expect(['high', 'medium', 'low']).toContain(route.confidence)
      expect(route.reasons.length).toBeGreaterThan(0)
    }
  })

  test('reads pages: modes, revalidate and tags, with styles left out', async () => {
    const { pages } = await scanApp({ root: fixture('app-basic') })
    expect(pages).toEqual([
      { path: '/', file: 'src/pages/index.ts', mode: 'static', revalidate: null, tags: [] },
      { path: '/about', file: 'src/pages/about.ts', mode: 'hybrid', revalidate: 60, tags: ['about', 'team'] },
      { path: '/blog/:slug', file: 'src/pages/blog/[slug].ts', mode: 'server', revalidate: null, tags: [] },
    ])
  })

  test('an app without src/api or src/pages scans to nothing', async () => {
    const result = await scanApp({ root: fixture('app-basic/src/pages') })
    expect(result).toMatchObject({ routes: [], pages: [], errors: [] })
  })
})

describe('config errors', () => {
  test('every error in every file is reported, sorted by file and position', async () => {
    const { errors, routes } = await scanApp({ root: fixture('bad-config') })
    expect(errors.every((e) => e instanceof ConfigError)).toBe(true)
    expect(errors.map((e) => `${e.file}:${e.line}:${e.column}`)).toEqual([
      'src/api/compute.ts:1:55',
      'src/api/literals.ts:7:3',
      'src/api/literals.ts:8:12',
      'src/api/literals.ts:9:4',
      'src/api/origins.ts:5:13',
      'src/api/origins.ts:5:21',
      'src/api/schedule.ts:2:25',
      'src/pages/index.ts:2:29',
    ])
    // Files with errors still appear, so a dev server can show what it has.
    expect(routes.map((r) => r.file)).toContain('src/api/good.ts')
  })

  test('an error formats as file:line:column: message', () => {
    const error = new ConfigError('src/api/a.ts', 3, 14, 'route.timeout must be a static literal')
    expect(String(error)).toBe('src/api/a.ts:3:14: route.timeout must be a static literal')
    expect(error.toJSON()).toEqual({ file: 'src/api/a.ts', line: 3, column: 14, message: 'route.timeout must be a static literal' })
  })

  test('assertNoConfigErrors throws every error at once', async () => {
    const result = await scanApp({ root: fixture('bad-config') })
    expect(() => assertNoConfigErrors(result)).toThrow(ManifestError)
    try {
      assertNoConfigErrors(result)
    } catch (error) {
      expect((error as ManifestError).errors).toHaveLength(8)
      expect((error as ManifestError).message.split('\n')).toHaveLength(8)
    }
  })

  test('two files with one URL, or two tasks with one name, are an error naming both files', async () => {
    const { errors } = await scanApp({ root: fixture('bad-duplicates') })
    expect(errors.map(String)).toEqual([
      'src/api/jobs/notify.ts:1:1: task name jobs.notify is declared by both src/api/jobs.notify.ts and src/api/jobs/notify.ts; rename or remove one of them',
      'src/api/users/index.ts:1:1: URL /api/users is declared by both src/api/users.ts and src/api/users/index.ts; rename or remove one of them',
      'src/pages/about/index.ts:1:1: URL /about is declared by both src/pages/about.ts and src/pages/about/index.ts; rename or remove one of them',
    ])
  })

  test('bad paths and tasks that cannot be named are errors', async () => {
    const { errors } = await scanApp({ root: fixture('bad-paths') })
    expect(errors.map(String)).toEqual([
      'src/api/[...rest]/more.ts:1:1: catch-all segment [...rest] must be the last part of the path',
      'src/api/[id]/[id].ts:1:1: parameter "id" appears twice in the path',
      'src/api/index.ts:1:1: a task needs a name, and src/api/index.ts maps to /api itself; move it to a file such as src/api/report.ts',
      'src/api/items/[item-id].ts:1:1: path segment "[item-id]" is not a valid parameter; write [name] or [...name]',
      'src/api/items/[slug].ts:1:1: task routes cannot have path parameters (/api/items/:slug): a task is called by name, not by URL; rename the file without [brackets]',
    ])
  })

  // Parameter names do not change which requests a pattern matches, so
  // users/[id].ts and users/[slug].ts are one URL, and a router would only
  // ever reach one of them.
  test('files whose URL patterns differ only in parameter names are one URL declared twice, naming both files', async () => {
    const { errors } = await scanApp({ root: fixture('same-url-app') })
    expect(errors.map(String)).toEqual([
      'src/api/files/[...rest]/index.ts:1:1: URL /api/files/:rest* (as /api/files/:path*) is declared by both src/api/files/[...path].ts and src/api/files/[...rest]/index.ts; rename or remove one of them',
      'src/api/orgs/[org]/[member].ts:1:1: URL /api/orgs/:org/:member (as /api/orgs/:id/:user) is declared by both src/api/orgs/[id]/[user].ts and src/api/orgs/[org]/[member].ts; rename or remove one of them',
      'src/api/users/[slug].ts:1:1: URL /api/users/:slug (as /api/users/:id) is declared by both src/api/users/[id].ts and src/api/users/[slug].ts; rename or remove one of them',
      'src/pages/blog/[b].ts:1:1: URL /blog/:b (as /blog/:a) is declared by both src/pages/blog/[a].ts and src/pages/blog/[b].ts; rename or remove one of them',
    ])
  })

  test('a parameter next to a static name or a catch-all is not a duplicate', async () => {
    const { routes } = await scanApp({ root: fixture('same-url-app') })
    const paths = routes.map((route) => route.path)
    expect(paths).toContain('/api/users/me')
    expect(paths).toContain('/api/files/:name')
    expect(paths).toContain('/api/files/:rest*')
  })
})

describe('scanFile', () => {
  test('re-checks one route file, by relative or absolute path', async () => {
    const root = fixture('app-basic')
    const relative = await scanFile({ root, file: 'src/api/report.ts' })
    const absolute = await scanFile({ root, file: `${root}/src/api/report.ts` })
    expect(relative.errors).toEqual([])
    expect(relative.route?.name).toBe('report')
    expect(absolute).toEqual(relative)
  })

  test('checks unsaved text when given', async () => {
    const result = await scanFile({
      root: fixture('app-basic'),
      file: 'src/api/report.ts',
      source: `export const route = { kind: 'task', retries: -1 }\n`,
    })
    expect(result.errors.map(String)).toEqual([
      'src/api/report.ts:1:47: route.retries must be a whole number of extra attempts, 0 or more (got -1)',
    ])
  })

  test('scans pages too', async () => {
    const result = await scanFile({ root: fixture('app-basic'), file: 'src/pages/about.ts' })
    expect(result).toMatchObject({ route: null, page: { path: '/about', mode: 'hybrid' }, errors: [] })
  })

  test('files that are not routes give nothing', async () => {
    const root = fixture('app-basic')
    for (const file of [
      'src/api/_lib/users.ts',
      'src/api/_helpers.ts',
      'src/api/types.d.ts',
      'src/api/users/users.spec.ts',
      'package.json',
      'src/other.ts',
    ]) {
      expect(await scanFile({ root, file, source: 'export function GET() {}' })).toEqual({ route: null, page: null, errors: [] })
    }
  })
})
