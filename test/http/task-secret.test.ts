/**
 * The task secret: which variable it is read from, and the strength a
 * server requires of it, 32 bytes at least outside development, since
 * anyone holding a run token can test guesses of it offline.
 */
import { afterEach, describe, expect, it, vi } from 'vitest'
import { createSvcHandler, type RuntimeApiRoute } from '../../src/index.ts'
import type { SvcServer } from '../../src/node.ts'
import { createCoreHandler } from '../../src/runtime/handler.ts'
import { recordingLogger } from '../tasks/_helpers.ts'
import { serve } from './_helpers.ts'

const routes: RuntimeApiRoute[] = []
const PRIMARY = 'the-primary-secret-0123456789abcdef'
const ALIAS = 'the-alias-secret-0123456789abcdef012'
const list = (env: Record<string, string>, authorization: string) =>
  createSvcHandler({ routes, env: { NODE_ENV: 'production', ...env }, logger: recordingLogger() }).fetch(
    new Request('http://svc/__tasks', { headers: { authorization } }),
  )

describe('the task secret', () => {
  it('is SVC_TASK_SECRET, which wins over its alias THEN_TASK_SECRET', async () => {
    const both = { SVC_TASK_SECRET: PRIMARY, THEN_TASK_SECRET: ALIAS }
    expect((await list(both, `Bearer ${PRIMARY}`)).status).toBe(200)
    expect((await list(both, `Bearer ${ALIAS}`)).status).toBe(401)
  })

  it('is THEN_TASK_SECRET when SVC_TASK_SECRET is unset or empty', async () => {
    expect((await list({ THEN_TASK_SECRET: ALIAS }, `Bearer ${ALIAS}`)).status).toBe(200)
    expect((await list({ SVC_TASK_SECRET: '', THEN_TASK_SECRET: ALIAS }, `Bearer ${ALIAS}`)).status).toBe(200)
    const wrong = await list({ THEN_TASK_SECRET: ALIAS }, 'Bearer other')
    expect(wrong.status).toBe(401)
    // The alias is read, not advertised: the answer names SVC_TASK_SECRET.
    expect((await wrong.json()).error).toBe('The bearer token does not match the task secret, SVC_TASK_SECRET')
  })

  it('notes the alias once per process, naming the variable to set', async () => {
    vi.resetModules()
    const { taskSecret } = await import('../../src/runtime/rules.ts')
    const warnings: string[] = []
    const warn = (message: string) => warnings.push(message)
    expect(taskSecret({ SVC_TASK_SECRET: 'primary' }, warn)).toBe('primary')
    expect(warnings).toEqual([])
    expect(taskSecret({ THEN_TASK_SECRET: 'alias' }, warn)).toBe('alias')
    expect(taskSecret({ THEN_TASK_SECRET: 'alias' }, warn)).toBe('alias')
    expect(warnings).toEqual([
      '[svc] THEN_TASK_SECRET is read as SVC_TASK_SECRET, an alias kept for older deployments: rename the variable to SVC_TASK_SECRET',
    ])
  })

  it('says when the alias is ignored because both are set', async () => {
    vi.resetModules()
    const { taskSecret } = await import('../../src/runtime/rules.ts')
    const warnings: string[] = []
    expect(taskSecret({ SVC_TASK_SECRET: 'primary', THEN_TASK_SECRET: 'alias' }, (m) => warnings.push(m))).toBe('primary')
    expect(warnings).toEqual(['[svc] THEN_TASK_SECRET is ignored, since SVC_TASK_SECRET is set: remove THEN_TASK_SECRET'])
  })
})

describe('the strength of the task secret', () => {
  const MESSAGE =
    'SVC_TASK_SECRET must be at least 32 bytes, since anyone holding a run token can test guesses of it offline (got 31 bytes). Set it to a random value: openssl rand -hex 32'
  const SHORT = 'a'.repeat(31)
  const ENOUGH = 'a'.repeat(32)

  afterEach(() => {
    vi.resetModules()
  })

  it('refuses a production server whose secret is 31 bytes, saying how to make one, and starts one whose secret is 32', async () => {
    await expect(serve({ env: { NODE_ENV: 'production', SVC_TASK_SECRET: SHORT } })).rejects.toThrow(
      new RangeError(`startSvcServer(): ${MESSAGE}`),
    )
    const server = await serve({ env: { NODE_ENV: 'production', SVC_TASK_SECRET: ENOUGH } })
    const res = await fetch(`${server.url}/__tasks`, { headers: { authorization: `Bearer ${ENOUGH}` } })
    expect(res.status).toBe(200)
  })

  it('is the same rule for createSvcHandler, the alias THEN_TASK_SECRET, and a worker with no NODE_ENV', () => {
    const logger = recordingLogger()
    expect(() => createSvcHandler({ routes, env: { NODE_ENV: 'production', SVC_TASK_SECRET: SHORT }, logger })).toThrow(
      new RangeError(`createSvcHandler(): ${MESSAGE}`),
    )
    expect(() => createSvcHandler({ routes, env: { NODE_ENV: 'production', THEN_TASK_SECRET: SHORT }, logger })).toThrow(MESSAGE)
    // A worker's bindings rarely carry NODE_ENV: without one, the server is a production one.
    expect(() => createCoreHandler({ routes, env: { SVC_TASK_SECRET: SHORT }, logger })).toThrow(MESSAGE)
    expect(createCoreHandler({ routes, env: { SVC_TASK_SECRET: ENOUGH }, logger }).fetch).toBeTypeOf('function')
    expect(logger.lines).toEqual([])
  })

  it('counts bytes of UTF-8, not characters, and never repeats the secret', () => {
    const logger = recordingLogger()
    // 16 characters of 2 bytes each.
    expect(createSvcHandler({ routes, env: { NODE_ENV: 'production', SVC_TASK_SECRET: 'é'.repeat(16) }, logger }).fetch).toBeTypeOf(
      'function',
    )
    const refused = () => createSvcHandler({ routes, env: { NODE_ENV: 'production', SVC_TASK_SECRET: 'change-me' }, logger })
    expect(refused).toThrow(/at least 32 bytes, .*\(got 9 bytes\)/)
    expect(refused).not.toThrow(/change-me/)
  })

  it('lets a server without a secret start, as before: its admin surface then refuses other requests', () => {
    expect(createSvcHandler({ routes, env: { NODE_ENV: 'production' }, logger: recordingLogger() }).fetch).toBeTypeOf('function')
  })

  it('warns once in development, however many servers start or reload, and starts them', async () => {
    vi.resetModules()
    const { startSvcServer } = await import('../../src/node.ts')
    const { createSvcHandler: fresh } = await import('../../src/index.ts')
    const logger = recordingLogger()
    const servers: SvcServer[] = []
    try {
      for (const options of [
        { env: { NODE_ENV: 'development', SVC_TASK_SECRET: 'change-me' } },
        { dev: true, env: { SVC_TASK_SECRET: 'change-me' } },
      ]) {
        servers.push(await startSvcServer({ apiRoutes: [], pages: [], port: 0, installSignalHandlers: false, logger, ...options }))
      }
      await servers[0].reload({ apiRoutes: [], pages: [] })
      fresh({ routes, env: { NODE_ENV: 'test', SVC_TASK_SECRET: 'change-me' }, logger })
      const res = await fetch(`${servers[0].url}/__tasks`, { headers: { authorization: 'Bearer change-me' } })
      expect(res.status).toBe(200)
    } finally {
      await Promise.all(servers.map((server) => server.close()))
    }
    expect(logger.lines.filter((line) => line.level === 'warn').map((line) => line.text)).toEqual([
      '[svc] SVC_TASK_SECRET must be at least 32 bytes, since anyone holding a run token can test guesses of it offline (got 9 bytes). Set it to a random value: openssl rand -hex 32. It is allowed in development only: a production server refuses to start with it',
    ])
  })
})
