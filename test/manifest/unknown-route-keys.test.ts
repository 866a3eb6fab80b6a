/**
 * A field `route` does not have is a setting the app thinks it made: a
 * misspelled `retries` leaves a task with none. Every command that scans
 * fails such a file at the key's `file:line:col`, naming the field it most
 * likely misspells, and the runtime refuses a route handed to it from code
 * on the same rule.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { createApiApp, createTaskRuntime, type RuntimeApiRoute } from '../../src/index.ts'
import { closestName, ROUTE_FIELDS } from '../../src/runtime/route-config.ts'
import { svc } from '../cli/_svc.ts'
import { writeApp } from '../targets/_app.ts'
import { at, scanRoute } from './_helpers.ts'

const RETIRES = `export const route = { kind: 'task', retires: 3 }\nexport async function POST() { return 1 }\n`

describe('the scanner', () => {
  test('route.retires is an error at the key: did you mean "retries"', async () => {
    const { route, errors } = await scanRoute(RETIRES, 'src/api/jobs/send.ts')
    expect(errors).toEqual([`src/api/jobs/send.ts:${at(RETIRES, 'retires')}: route.retires is not a route field; did you mean "retries"?`])
    expect(at(RETIRES, 'retires')).toBe('1:38')
    expect(route.retries).toBe(0)
  })

  test('every unknown field is reported, each at its own key, quoted keys and satisfies included', async () => {
    const source = [
      `import type { RouteConfig } from 'svcjs'`,
      `export const route = {`,
      `  kind: 'task',`,
      `  'timout': 1000,`,
      `  rateLimt: { limit: 1, periodSeconds: 60 },`,
      `} satisfies RouteConfig`,
      `export async function POST() {}`,
      '',
    ].join('\n')
    const { errors } = await scanRoute(source)
    expect(errors).toEqual([
      `src/api/route.ts:${at(source, `'timout'`)}: route.timout is not a route field; did you mean "timeout"?`,
      `src/api/route.ts:${at(source, 'rateLimt')}: route.rateLimt is not a route field; did you mean "rateLimit"?`,
    ])
  })

  test('an unknown field is an error in a route of any kind', async () => {
    for (const kind of ['serverless', 'hot']) {
      const source = `export const route = { kind: '${kind}', comptue: { class: 'dedicated' } }\nexport function GET() {}\n`
      const { errors } = await scanRoute(source)
      expect(errors).toEqual([`src/api/route.ts:${at(source, 'comptue')}: route.comptue is not a route field; did you mean "compute"?`])
    }
  })

  test('a name close to no field lists the fields', async () => {
    const source = `export const route = { kind: 'task', maxAttempts: 3 }\nexport async function POST() {}\n`
    const { errors } = await scanRoute(source)
    expect(errors).toEqual([`src/api/route.ts:1:38: route.maxAttempts is not a route field; route fields are ${ROUTE_FIELDS.join(', ')}`])
  })

  test('an unknown field of route.compute is an error at its key', async () => {
    const source = `export const route = { kind: 'hot', compute: { memroy: '2gb', cores: 2 } }\nexport function GET() {}\n`
    const { errors } = await scanRoute(source)
    expect(errors).toEqual([
      `src/api/route.ts:${at(source, 'memroy')}: route.compute.memroy is not a compute field; did you mean "memory"?`,
      `src/api/route.ts:${at(source, 'cores')}: route.compute.cores is not a compute field; compute fields are class, memory, cpu`,
    ])
  })

  test('route.origins in a route that is not hot is an error at its key, naming the fix', async () => {
    for (const kind of ['serverless', 'task']) {
      const source = `export const route = { kind: '${kind}', origins: ['https://app.example.com'] }\nexport async function POST() {}\n`
      const { route, errors } = await scanRoute(source)
      expect(errors).toEqual([
        `src/api/route.ts:${at(source, 'origins')}: route.origins applies to hot routes only (the WebSocket handshake), and this route is ${kind}; set kind: 'hot' if it serves WebSockets, or remove route.origins`,
      ])
      expect(route.origins).toBeNull()
    }
  })

  test('route.origins in a hot route is read as before', async () => {
    const source = `export const route = { kind: 'hot', origins: ['https://app.example.com/'] }\nexport function websocket() {}\n`
    const { route, errors } = await scanRoute(source)
    expect(errors).toEqual([])
    expect(route.origins).toEqual(['https://app.example.com'])
  })
})

describe('did you mean', () => {
  test.each([
    ['retires', 'retries'], // two neighbours swapped: one edit
    ['retrys', 'retries'],
    ['Timeout', 'timeout'], // case
    ['timezome', 'timezone'],
    ['concurency', 'concurrency'],
    ['priorityAgeing', 'priorityAging'],
    ['prio', 'priority'], // a prefix of a field
    ['timeoutMs', 'timeout'], // a field and more
    ['kinds', 'kind'],
  ])('%s → %s', (typed, field) => {
    expect(closestName(typed, ROUTE_FIELDS)).toBe(field)
  })

  test.each(['maxAttempts', 'id', 'no', 'x', 'handler', ''])('%j suggests nothing', (typed) => {
    expect(closestName(typed, ROUTE_FIELDS)).toBeNull()
  })

  test('the nearest field wins over a farther one', () => {
    expect(closestName('retentio', ROUTE_FIELDS)).toBe('retention')
    expect(closestName('ab', ['abc', 'ab'])).toBe('ab')
  })

  test('a very long name costs no more than a short one', () => {
    const long = 'retries'.repeat(200_000)
    const started = performance.now()
    expect(closestName(long, ROUTE_FIELDS)).toBe('retries')
    expect(closestName(`x${long}`, ROUTE_FIELDS)).toBeNull()
    expect(performance.now() - started).toBeLessThan(200)
  })
})

describe('the CLI', () => {
  let app: Awaited<ReturnType<typeof writeApp>>
  beforeAll(async () => {
    app = await writeApp({ 'src/api/jobs/send.ts': RETIRES, 'src/api/hello.ts': `export function GET() { return 'hi' }\n` })
  })
  afterAll(() => app.cleanup())
  const expected = `src/api/jobs/send.ts:1:38: route.retires is not a route field; did you mean "retries"?\n1 config error\n`

  test('svc routes inspect fails with the error at file:line:col', async () => {
    const { code, stdout, stderr } = await svc(['routes', 'inspect', '--root', app.root])
    expect({ code, stdout, stderr }).toEqual({ code: 1, stdout: '', stderr: expected })
  })

  test('svc build fails with the same error, before bundling anything', async () => {
    const { code, stderr } = await svc(['build', '--target', 'node', '--root', app.root])
    expect({ code, stderr }).toEqual({ code: 1, stderr: expected })
  })
})

describe('the runtime', () => {
  const misspelled = (): RuntimeApiRoute => ({
    path: '/api/jobs/send',
    module: { route: { kind: 'task', retires: 3 } as never, POST: async () => 1 },
  })
  const refusal = new TypeError('Route /api/jobs/send: route.retires is not a route field; did you mean "retries"?')

  test('createTaskRuntime and createApiApp refuse a route from code with an unknown route field', () => {
    expect(() => createTaskRuntime({ routes: [misspelled()], env: {} })).toThrow(refusal)
    expect(() => createApiApp({ routes: [misspelled()] })).toThrow(refusal)
  })

  test('a route from code with only route fields starts', async () => {
    const runtime = createTaskRuntime({
      routes: [{ path: '/api/jobs/send', module: { route: { kind: 'task', retries: 3 }, POST: async () => 1 } }],
      env: {},
    })
    await runtime.close()
  })
})
