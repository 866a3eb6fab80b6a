import { describe, expect, test } from 'vitest'
import { parseMemorySize } from '../../src/manifest/compute.ts'
import { at, scanRoute } from './_helpers.ts'

const task = (compute: string) => `export const route = { kind: 'task', compute: ${compute} }\nexport async function POST() {}\n`

describe('the function class', () => {
  test('serverless routes and tasks default to a 1gb function', async () => {
    for (const source of [`export function GET() {}\n`, `export const kind = 'task'\nexport async function POST() {}\n`]) {
      const { route } = await scanRoute(source)
      expect(route.compute).toEqual({ class: 'function', memory: '1gb', cpu: null })
    }
  })

  test.each(['1gb', '4gb', '6gb', '8gb', '12gb'])('memory %s is selectable', async (memory) => {
    const { route, errors } = await scanRoute(task(`{ class: 'function', memory: '${memory}' }`))
    expect(errors).toEqual([])
    expect(route.compute).toEqual({ class: 'function', memory, cpu: null })
  })

  test('class may be left out: memory alone selects a function size', async () => {
    const { route } = await scanRoute(task(`{ memory: '8gb' }`))
    expect(route.compute).toEqual({ class: 'function', memory: '8gb', cpu: null })
  })

  test.each(['2gb', '512mb', '1GB', '16gb'])('memory %s is an error naming the allowed values', async (memory) => {
    const source = task(`{ class: 'function', memory: '${memory}' }`)
    const { route, errors } = await scanRoute(source)
    expect(errors).toEqual([
      `src/api/route.ts:${at(source, `'${memory}'`)}: route.compute.memory for class 'function' must be one of '1gb', '4gb', '6gb', '8gb', '12gb' (got "${memory}")`,
    ])
    expect(route.compute.memory).toBe('1gb')
  })

  test('cpu on a function is an error', async () => {
    const source = task(`{ class: 'function', cpu: 2 }`)
    const { errors } = await scanRoute(source)
    expect(errors).toEqual([
      `src/api/route.ts:${at(source, '2 }')}: route.compute.cpu applies to class 'dedicated' only; function CPU follows its memory size`,
    ])
  })

  test('an unknown class is an error', async () => {
    const source = task(`{ class: 'gpu' }`)
    const { errors } = await scanRoute(source)
    expect(errors).toEqual([`src/api/route.ts:${at(source, `'gpu'`)}: route.compute.class must be 'function' or 'dedicated' (got "gpu")`])
  })

  test('compute must be an object', async () => {
    const source = task(`'4gb'`)
    const { errors } = await scanRoute(source)
    expect(errors).toEqual([
      `src/api/route.ts:${at(source, `'4gb'`)}: route.compute must be an object such as { class: 'function', memory: '1gb' }`,
    ])
  })
})

describe('the dedicated class', () => {
  test('memory and cpu are preserved, with the legacy machine shape', async () => {
    const { route, errors } = await scanRoute(task(`{ class: 'dedicated', memory: '2gb', cpu: 2 }`))
    expect(errors).toEqual([])
    expect(route.compute).toEqual({ class: 'dedicated', memory: '2gb', cpu: 2, machine: { memoryMb: 2048, cpus: 2 } })
  })

  test('memory in megabytes is kept as declared', async () => {
    const { route } = await scanRoute(task(`{ class: 'dedicated', memory: '512mb' }`))
    expect(route.compute).toEqual({ class: 'dedicated', memory: '512mb', cpu: null, machine: { memoryMb: 512, cpus: null } })
  })

  test('a bare dedicated class leaves memory and cpu to the machine profile', async () => {
    const { route } = await scanRoute(task(`{ class: 'dedicated' }`))
    expect(route.compute).toEqual({ class: 'dedicated', memory: null, cpu: null, machine: { memoryMb: null, cpus: null } })
  })

  test.each([
    [`memory: 2048`, `route.compute.memory must be a size such as '512mb' or '2gb' (got 2048)`, '2048'],
    [`memory: 'lots'`, `route.compute.memory must be a size such as '512mb' or '2gb' (got "lots")`, `'lots'`],
    [`cpu: 0`, 'route.compute.cpu must be a positive whole number of CPUs (got 0)', '0 }'],
    [`cpu: 1.5`, 'route.compute.cpu must be a positive whole number of CPUs (got 1.5)', '1.5'],
  ])('%s is rejected', async (field, message, needle) => {
    const source = task(`{ class: 'dedicated', ${field} }`)
    const { errors } = await scanRoute(source)
    expect(errors).toEqual([`src/api/route.ts:${at(source, needle, field)}: ${message}`])
  })
})

describe('hot routes', () => {
  test('hot routes are dedicated by default', async () => {
    const { route } = await scanRoute(`export const route = { kind: 'hot' }\nexport function websocket() {}\n`)
    expect(route.compute).toEqual({ class: 'dedicated', memory: null, cpu: null, machine: { memoryMb: null, cpus: null } })
  })

  test('kind hot with class function is an error at the class', async () => {
    const source = `export const route = {\n  kind: 'hot',\n  compute: { class: 'function' },\n}\nexport function websocket() {}\n`
    const { route, errors } = await scanRoute(source)
    expect(errors).toEqual([
      `src/api/route.ts:3:21: hot routes need compute class 'dedicated': a function cannot hold WebSockets or process state between requests; remove class or set class: 'dedicated'`,
    ])
    expect(route.compute.class).toBe('dedicated')
  })

  test('a websocket export alone also makes class function an error', async () => {
    const { errors } = await scanRoute(`export const route = { compute: { class: 'function' } }\nexport function websocket() {}\n`)
    expect(errors[0]).toContain(`hot routes need compute class 'dedicated'`)
  })
})

describe('memory sizes', () => {
  test.each([
    ['512mb', 512],
    ['2gb', 2048],
    ['1.5gb', 1536],
    ['12GB', 12288],
    ['0gb', null],
    ['2 tb', null],
    ['0.3mb', null],
  ])('%s is %s MB', (size, mb) => {
    expect(parseMemorySize(size)).toBe(mb)
  })
})
