import { describe, expect, it } from 'vitest'
import { createTaskRuntime } from '../../src/runtime/tasks/index.ts'
import { at, scanRoute } from './_helpers.ts'

// The runtime refuses a task timeout longer than the longest timer it can
// set (2^31 − 1 ms) when it starts. The scanner must report the same
// config as an error with its position, or `svc routes inspect` and `svc
// build` pass an app that then fails to start.
describe('route.timeout upper bound', () => {
  it('a timeout past 2^31 − 1 ms is a config error at the value', async () => {
    const source = `export const route = {\n  kind: 'task',\n  timeout: 3_000_000_000,\n}\nexport async function POST() {}\n`
    const { errors } = await scanRoute(source)
    expect(errors).toEqual([
      `src/api/route.ts:${at(source, '3_000')}: route.timeout must be at most 2147483647 ms (about 24.8 days), the longest timer the runtime can set (got 3000000000)`,
    ])
  })

  it('the largest timeout the scanner accepts is one the runtime starts with', async () => {
    const source = `export const route = { kind: 'task', timeout: 2_147_483_647 }\nexport async function POST() {}\n`
    const { route, errors } = await scanRoute(source)
    expect(errors).toEqual([])
    expect(route.timeout).toBe(2_147_483_647)
    const rt = createTaskRuntime({ routes: [{ ...route, module: { route: { kind: 'task', timeout: route.timeout! }, POST: () => 1 } }], env: {} })
    expect(rt.tasks.get('route')?.timeout).toBe(2_147_483_647)
    await rt.close()
  })
})
