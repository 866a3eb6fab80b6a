/**
 * A route file written as a task but without `kind: 'task'` would be a
 * serverless route, whose POST runs the task for any caller without the task
 * secret. The scanner fails such a file at `file:line:col`, naming the line
 * that makes it a task, and the runtime refuses a route handed to it from code
 * on the same rule.
 */
import { describe, expect, test } from 'vitest'
import { createApiApp, createTaskRuntime, defineTask, type RuntimeApiRoute } from '../../src/index.ts'
import { loadApiRoutes } from '../../src/node.ts'
import { writeApp } from '../targets/_app.ts'
import { at, scanRoute } from './_helpers.ts'

const FORGOT = `import { defineTask } from 'svcjs'\n\nexport const POST = defineTask({ handler: async () => 1 })\n`
const FIX = "add `export const route = { kind: 'task' }`"
const SERVERLESS = 'this file declares no kind, so it is a serverless route'

describe('the scanner', () => {
  test('a defineTask() POST without kind: task is an error at the call, naming the fix', async () => {
    const { route, errors } = await scanRoute(FORGOT, 'src/api/jobs/forgot.ts')
    expect(errors).toEqual([
      `src/api/jobs/forgot.ts:${at(FORGOT, 'defineTask({')}: POST is a defineTask() handler, but ${SERVERLESS}: POST /api/jobs/forgot would run the task for any caller, without the task secret; ${FIX}`,
    ])
    expect(route.kind).toBe('serverless')
  })

  test('the same file with route = { kind: task } is a task, with no error and no warning', async () => {
    const source = `import { defineTask } from 'svcjs'\nexport const route = { kind: 'task' }\nexport const POST = defineTask({ handler: async () => 1 })\n`
    const { route, errors } = await scanRoute(source, 'src/api/jobs/forgot.ts')
    expect(errors).toEqual([])
    expect(route).toMatchObject({ kind: 'task', name: 'jobs.forgot', methods: ['POST'], warnings: [] })
  })

  test('defineTask is found under an alias, through a namespace import and behind a local name', async () => {
    const cases = [
      `import { defineTask as task } from 'svcjs'\nexport const POST = task({ handler: () => 1 })\n`,
      `import * as svc from 'svcjs'\nexport const POST = svc.defineTask({ handler: () => 1 }) as unknown\n`,
      `import { defineTask } from 'svcjs'\nconst run = defineTask({ handler: () => 1 })\nexport { run as POST }\n`,
    ]
    for (const source of cases) {
      const { errors } = await scanRoute(source, 'src/api/jobs/forgot.ts')
      expect(errors).toEqual([expect.stringContaining(`POST is a defineTask() handler, but ${SERVERLESS}`)])
    }
  })

  test('the fix follows how the kind was written', async () => {
    const task = `export const POST = defineTask({ handler: () => 1 })\n`
    const cases: [string, string][] = [
      [
        `export const route = { kind: 'serverless' }\n`,
        `but route.kind is 'serverless': POST /api/route would run the task for any caller, without the task secret; set route.kind to 'task'`,
      ],
      [
        `export const kind = 'hot'\n`,
        `but the kind export is 'hot': POST /api/route would run the task for any caller, without the task secret; set the kind export to 'task'`,
      ],
      [`export const route = { retries: 1 }\n`, `; add kind: 'task' to the route export`],
      [`export function websocket() {}\n`, `but this file exports websocket and declares no kind, so it is a hot route: POST /api/route`],
    ]
    for (const [config, message] of cases) {
      const { errors } = await scanRoute(`${config}${task}`)
      expect(errors.find((e) => e.includes('defineTask()'))).toContain(message)
    }
  })

  test('a schedule export without kind: task is an error at the value, naming the fix', async () => {
    const source = `export const schedule = '0 3 * * *'\nexport async function POST() { return 1 }\n`
    const { route, errors } = await scanRoute(source, 'src/api/jobs/cleanup.ts')
    expect(errors).toEqual([
      `src/api/jobs/cleanup.ts:1:25: schedule applies to tasks only, but ${SERVERLESS}; ${FIX} if it is a task, or remove schedule`,
    ])
    expect(route.schedule).toBeNull()
  })

  test('every task-only field of route, and the on and input exports, is an error in a route that is not a task', async () => {
    const fields = {
      retries: '1',
      timeout: '1000',
      schedule: `'0 * * * *'`,
      timezone: `'UTC'`,
      on: `'order.paid'`,
      concurrency: '1',
      rateLimit: '{ limit: 1, periodSeconds: 60 }',
      debounce: '{ seconds: 5 }',
      priority: '5',
      priorityAging: 'false',
      retention: '60',
    }
    const source = [
      `export const route = { ${Object.entries(fields)
        .map(([name, value]) => `${name}: ${value}`)
        .join(', ')} }`,
      `export const on = 'order.paid'`,
      `export const input = { '~standard': {} }`,
      `export async function POST() {}`,
      '',
    ].join('\n')
    const { route, errors } = await scanRoute(source)
    expect(errors.map((e) => e.replace(/^src\/api\/route\.ts:\d+:\d+: /, '').split(' applies to tasks only')[0])).toEqual([
      ...Object.keys(fields).map((name) => `route.${name}`),
      'on',
      'input',
    ])
    expect(errors.at(-1)).toContain('or remove input (a route checks its requests with `export const schema = defineSchema({ body })`)')
    expect(route).toMatchObject({ kind: 'serverless', retries: null, timeout: null, schedule: null, timezone: null, on: null, flow: null })
  })

  test('a kind the scanner cannot read is reported once, not again as task config in a route that is not a task', async () => {
    const source = `export const route = { kind: 'job', retries: 1 }\nexport const POST = defineTask({ handler: () => 1 })\n`
    const { errors } = await scanRoute(source)
    expect(errors).toEqual([`src/api/route.ts:1:30: route.kind must be one of 'serverless', 'hot', 'task' (got "job")`])
  })

  test('a serverless route that calls defineTask elsewhere, or exports a plain POST, is not flagged', async () => {
    const source = `import { defineTask } from 'svcjs'\nconst helper = defineTask({ handler: () => 1 })\nexport async function POST() { return helper }\n`
    expect((await scanRoute(source)).errors).toEqual([])
  })
})

describe('the runtime', () => {
  const forgot = (): RuntimeApiRoute => ({ path: '/api/jobs/forgot', module: { POST: defineTask({ handler: async () => 1 }) } })
  const refusal = `Route /api/jobs/forgot: its POST export is a defineTask() handler, but the route is serverless: POST /api/jobs/forgot would run the task for any caller, without the task secret; make it a task with \`export const route = { kind: 'task' }\` in its module (or kind: 'task' on the route entry)`

  test('createApiApp refuses a route whose handler is a defineTask() value and whose kind is not task', () => {
    expect(() => createApiApp({ routes: [forgot()] })).toThrow(new TypeError(refusal))
    expect(() => createApiApp({ routes: [{ ...forgot(), kind: 'serverless' }] })).toThrow(new TypeError(refusal))
  })

  test('createTaskRuntime refuses the same route', () => {
    expect(() => createTaskRuntime({ routes: [forgot()], env: {} })).toThrow(new TypeError(refusal))
  })

  test('a schedule export or task field of route in a route that is not a task is refused at start', () => {
    const scheduled = { path: '/api/cleanup', module: { schedule: '0 3 * * *', POST: () => 1 } }
    expect(() => createApiApp({ routes: [scheduled] })).toThrow(
      /^Route \/api\/cleanup: the schedule export applies to tasks only, but the route is serverless; make it a task with/,
    )
    const limited = { path: '/api/sync', module: { route: { concurrency: 1 }, POST: () => 1 } }
    expect(() => createTaskRuntime({ routes: [limited], env: {} })).toThrow(
      /^Route \/api\/sync: route\.concurrency applies to tasks only, but the route is serverless;/,
    )
  })

  test('a proper task file still runs, and is not an HTTP endpoint', async () => {
    const routes = [{ ...forgot(), module: { route: { kind: 'task' as const }, POST: defineTask({ handler: async () => 1 }) } }]
    const rt = createTaskRuntime({ routes, env: {} })
    const app = createApiApp({ routes })
    expect((await app.request('/api/jobs/forgot', { method: 'POST' })).status).toBe(404)
    const { id } = await rt.trigger('jobs.forgot')
    expect(await rt.waitForRun(id)).toMatchObject({ status: 'completed', result: 1 })
    await rt.close()
  })

  test('a defineTask() handler the scanner cannot see, re-exported from a helper, is refused when the app starts', async () => {
    const app = await writeApp({
      'src/api/jobs/_forgot.ts': `import { defineTask } from 'svcjs'\nexport const POST = defineTask({ handler: async () => 1 })\n`,
      'src/api/jobs/forgot.ts': `export { POST } from './_forgot.ts'\n`,
    })
    try {
      const routes = await loadApiRoutes({ root: app.root })
      expect(() => createApiApp({ routes })).toThrow(new TypeError(refusal))
    } finally {
      await app.cleanup()
    }
  })
})
