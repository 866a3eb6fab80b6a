import { describe, expect, test, vi } from 'vitest'
import { createTaskRuntime } from '../../src/runtime/tasks/index.ts'
import { at, scanRoute } from './_helpers.ts'

describe('kind', () => {
  test('a file that declares nothing is a serverless route', async () => {
    const { route } = await scanRoute(`export function GET() {}\n`)
    expect(route.kind).toBe('serverless')
    expect(route.reasons[0]).toContain('serverless (the default)')
  })

  test('the kind export is shorthand for the kind', async () => {
    const { route, errors } = await scanRoute(`export const kind = 'task'\nexport async function POST() {}\n`, 'src/api/jobs/notify.ts')
    expect(errors).toEqual([])
    expect(route.kind).toBe('task')
    expect(route.name).toBe('jobs.notify')
  })

  test('route.kind wins over the kind export, with a warning about the conflict', async () => {
    const { route, errors } = await scanRoute(
      `export const kind = 'hot'\nexport const route = { kind: 'task' }\nexport async function POST() {}\n`,
    )
    expect(errors).toEqual([])
    expect(route.kind).toBe('task')
    expect(route.warnings).toContain(`the kind export ('hot') conflicts with route.kind ('task'); route.kind wins, remove one of them`)
  })

  test('the kind export counts when route has no kind', async () => {
    const { route } = await scanRoute(`export const kind = 'task'\nexport const route = { retries: 1 }\nexport async function POST() {}\n`)
    expect(route.kind).toBe('task')
    expect(route.retries).toBe(1)
    expect(route.warnings).toEqual([])
  })

  test('a websocket export with no kind makes a hot route, and says so', async () => {
    const { route } = await scanRoute(`export function websocket(peer) {}\n`)
    expect(route.kind).toBe('hot')
    expect(route.websocket).toBe(true)
    expect(route.reasons).toContain('exports websocket and declares no kind, so the route is hot')
  })

  test('an unknown kind names the allowed ones', async () => {
    const source = `export const route = { kind: 'cron' }\n`
    const { errors } = await scanRoute(source)
    expect(errors).toEqual([`src/api/route.ts:${at(source, `'cron'`)}: route.kind must be one of 'serverless', 'hot', 'task' (got "cron")`])
  })

  test('route must be an object literal', async () => {
    const source = `export const route = 'task'\n`
    const { errors } = await scanRoute(source)
    expect(errors).toEqual([`src/api/route.ts:1:22: route must be an object literal such as { kind: 'task' } (got 'task')`])
  })

  test('an unknown route field is an error at its key, listing the fields when none is close', async () => {
    const source = `export const route = { kind: 'task', retry: 2 }\nexport async function POST() {}\n`
    const { route, errors } = await scanRoute(source)
    expect(errors).toEqual([
      `src/api/route.ts:${at(source, 'retry')}: route.retry is not a route field; route fields are kind, compute, origins, retries, timeout, schedule, timezone, on, concurrency, rateLimit, debounce, priority, priorityAging, retention, maxDuration`,
    ])
    expect(route.warnings).toEqual([])
  })
})

describe('methods and exports', () => {
  test('method exports are found in every form', async () => {
    const source = [
      'export function GET() {}',
      'export const POST = async () => {}',
      'export async function PUT() {}',
      'function remove() {}',
      'const patch = () => {}',
      `export { remove as DELETE, patch as 'PATCH' }`,
      `export { handler as OPTIONS } from './_shared.ts'`,
      'export const input = {}',
      'export const schema = {}',
      '',
    ].join('\n')
    const { route } = await scanRoute(source)
    expect(route.methods).toEqual(['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS'])
    expect(route.hasInput).toBe(true)
    expect(route.hasSchema).toBe(true)
    expect(route.websocket).toBe(false)
  })

  test('type-only exports are not handlers', async () => {
    const { route } = await scanRoute(`type GET = () => void\nexport type { GET }\nexport interface POST {}\nexport function HEAD() {}\n`)
    expect(route.methods).toEqual(['HEAD'])
  })

  test('export * is reported as a warning, since its names are unknown', async () => {
    const { route } = await scanRoute(`export * from './_handlers.ts'\n`)
    expect(route.warnings).toContain(
      `export * from './_handlers.ts' is not followed: handlers or config it provides are not in the manifest`,
    )
  })
})

describe('task retries and timeout', () => {
  test('tasks default to 0 retries and a 30000 ms timeout', async () => {
    const { route } = await scanRoute(`export const route = { kind: 'task' }\nexport async function POST() {}\n`)
    expect(route.retries).toBe(0)
    expect(route.timeout).toBe(30000)
  })

  test('retries and timeout are null for routes that are not tasks', async () => {
    const { route } = await scanRoute(`export function GET() {}\n`)
    expect(route.retries).toBeNull()
    expect(route.timeout).toBeNull()
    expect(route.name).toBeNull()
  })

  test('declared retries and timeout are kept', async () => {
    const { route } = await scanRoute(
      `export const route = { kind: 'task', retries: 5, timeout: 1_500 }\nexport async function POST() {}\n`,
    )
    expect(route.retries).toBe(5)
    expect(route.timeout).toBe(1500)
  })

  test.each([
    ['retries: -1', 'route.retries must be a whole number of extra attempts, 0 or more (got -1)', '-1'],
    ['retries: 1.5', 'route.retries must be a whole number of extra attempts, 0 or more (got 1.5)', '1.5'],
    [`retries: '2'`, 'route.retries must be a number (got "2")', `'2'`],
    ['timeout: 0', 'route.timeout must be a positive number of milliseconds (got 0)', '0 }'],
    ['timeout: -5', 'route.timeout must be a positive number of milliseconds (got -5)', '-5'],
    ['timeout: true', 'route.timeout must be a number (got true)', 'true'],
    ['priority: 1001', 'route.priority must be a whole number from -1000 to 1000; higher starts first (got 1001)', '1001'],
    ['priority: 0.5', 'route.priority must be a whole number from -1000 to 1000; higher starts first (got 0.5)', '0.5'],
    [`priority: 'high'`, 'route.priority must be a number (got "high")', `'high'`],
    [
      'retention: 0',
      'route.retention must be a positive number of seconds that finished runs are kept, such as 604800 (7 days) (got 0)',
      '0 }',
    ],
    ['retention: 1e12', 'route.retention must be at most 3153600000 seconds (100 years) (got 1000000000000)', '1e12'],
    ['maxDuration: 0', 'route.maxDuration must be a positive number of seconds a whole run may last, such as 3600 (got 0)', '0 }'],
    ['maxDuration: 1e9', 'route.maxDuration must be at most 31536000 seconds (365 days) (got 1000000000)', '1e9'],
    [`maxDuration: '1h'`, 'route.maxDuration must be a number (got "1h")', `'1h'`],
  ])('%s is rejected', async (field, message, needle) => {
    const source = `export const route = { kind: 'task', ${field} }\nexport async function POST() {}\n`
    const { errors } = await scanRoute(source)
    expect(errors).toEqual([`src/api/route.ts:${at(source, needle, field)}: ${message}`])
  })

  test('priority, retention and maxDuration are route fields, and a task starts with them', async () => {
    const source = `export const route = { kind: 'task', priority: -3, retention: 3600, maxDuration: 90 }\nexport async function POST() {}\n`
    const { route, errors } = await scanRoute(source)
    expect(errors).toEqual([])
    expect(route.warnings).toEqual([])
    const rt = createTaskRuntime({
      routes: [{ ...route, module: { route: { kind: 'task', priority: -3, retention: 3600, maxDuration: 90 }, POST: () => 1 } }],
      env: {},
    })
    expect(rt.tasks.get('route')).toMatchObject({ priority: -3, retentionMs: 3_600_000, maxDurationMs: 90_000 })
    await rt.close()
  })

  test('retries on a route that is not a task is an error at the value, naming the fix', async () => {
    const { route, errors } = await scanRoute(`export const route = { retries: 3 }\nexport function GET() {}\n`)
    expect(errors).toEqual([
      `src/api/route.ts:1:33: route.retries applies to tasks only, but this file declares no kind, so it is a serverless route; add kind: 'task' to the route export if it is a task, or remove route.retries`,
    ])
    expect(route.retries).toBeNull()
  })

  // The runtime refuses a timeout longer than the longest timer it can set
  // (2^31 − 1 ms) when it starts; the scanner reports the same config with its
  // position, or `svc routes inspect` and `svc build` pass an app that then
  // fails to start.
  test('a timeout past 2^31 − 1 ms is a config error at the value', async () => {
    const source = `export const route = {\n  kind: 'task',\n  timeout: 3_000_000_000,\n}\nexport async function POST() {}\n`
    const { errors } = await scanRoute(source)
    expect(errors).toEqual([
      `src/api/route.ts:${at(source, '3_000')}: route.timeout must be at most 2147483647 ms (about 24.8 days), the longest timer the runtime can set (got 3000000000)`,
    ])
  })

  test('the largest timeout the scanner accepts is one the runtime starts with', async () => {
    const source = `export const route = { kind: 'task', timeout: 2_147_483_647 }\nexport async function POST() {}\n`
    const { route, errors } = await scanRoute(source)
    expect(errors).toEqual([])
    expect(route.timeout).toBe(2_147_483_647)
    const rt = createTaskRuntime({
      routes: [{ ...route, module: { route: { kind: 'task', timeout: route.timeout! }, POST: () => 1 } }],
      env: {},
    })
    expect(rt.tasks.get('route')?.timeout).toBe(2_147_483_647)
    await rt.close()
  })
})

describe('schedule', () => {
  test('a top-level schedule export is read', async () => {
    const { route, errors } = await scanRoute(
      `export const kind = 'task'\nexport const schedule = '*/5 * * * *'\nexport async function POST() {}\n`,
    )
    expect(errors).toEqual([])
    expect(route.schedule).toBe('*/5 * * * *')
  })

  test('schedule may also sit inside route', async () => {
    const { route } = await scanRoute(
      `export const route = { kind: 'task', schedule: '0 9 * * MON-FRI' }\nexport async function POST() {}\n`,
    )
    expect(route.schedule).toBe('0 9 * * MON-FRI')
  })

  test.each([
    ['0 0 * * * *', 'must be a five-field cron expression (minute hour day-of-month month day-of-week), got 6 fields'],
    ['* * * *', 'got 4 fields'],
    ['@daily', 'got 1 field'],
    ['61 * * * *', 'is not a valid cron expression: Invalid value for minute: 61'],
    ['* * * * funday', 'is not a valid cron expression'],
    ['0 0 31 2 *', 'never fires'],
  ])('%s is rejected at its position', async (expression, message) => {
    const source = `export const kind = 'task'\n\nexport const schedule = '${expression}'\nexport async function POST() {}\n`
    const { errors } = await scanRoute(source)
    expect(errors).toHaveLength(1)
    expect(errors[0]).toMatch(new RegExp(`^src/api/route\\.ts:3:25: schedule "${expression.replace(/[*]/g, '\\*')}" `))
    expect(errors[0]).toContain(message)
  })

  test('a schedule used by several tasks is rejected in each of them, at its own position', async () => {
    const first = await scanRoute(`export const kind = 'task'\nexport const schedule = '0 0 30 2 *'\n`, 'src/api/a.ts')
    const second = await scanRoute(`export const route = { kind: 'task', schedule: '0 0 30 2 *' }\n`, 'src/api/b.ts')
    expect(first.errors).toEqual(['src/api/a.ts:2:25: schedule "0 0 30 2 *" never fires: no date matches it'])
    expect(second.errors).toEqual(['src/api/b.ts:1:48: schedule "0 0 30 2 *" never fires: no date matches it'])
  })

  // A CLI command that checks schedules would otherwise load the time zone
  // data on every start; UTC needs none.
  test('a schedule without a time zone is checked in UTC without formatting dates through Intl', async () => {
    const formatToParts = vi.spyOn(Intl.DateTimeFormat.prototype, 'formatToParts')
    try {
      const { route, errors } = await scanRoute(`export const route = { kind: 'task' }\nexport const schedule = '30 4 * * *'\n`)
      expect(errors).toEqual([])
      expect(route.schedule).toBe('30 4 * * *')
      expect(formatToParts).not.toHaveBeenCalled()
    } finally {
      formatToParts.mockRestore()
    }
  })

  test('a schedule that is not a string is rejected', async () => {
    const { errors } = await scanRoute(`export const kind = 'task'\nexport const schedule = 5\n`)
    expect(errors).toEqual([`src/api/route.ts:2:25: schedule must be a cron expression string such as '0 * * * *' (got 5)`])
  })

  test('a schedule on a route that is not a task is an error at the value, naming the fix', async () => {
    const { route, errors } = await scanRoute(`export const schedule = '0 * * * *'\nexport function GET() {}\n`)
    expect(errors).toEqual([
      "src/api/route.ts:1:25: schedule applies to tasks only, but this file declares no kind, so it is a serverless route; add `export const route = { kind: 'task' }` if it is a task, or remove schedule",
    ])
    expect(route.schedule).toBeNull()
  })

  // Targets turn the manifest's schedule into platform cron triggers
  // (wrangler triggers.crons, Vercel crons, schedules.json), and a fired cron
  // is matched against task schedules with whitespace collapsed. Two spellings
  // of one expression would become two triggers that both fire every task on
  // it, so the manifest carries the single-spaced form the runtime uses.
  test('tabs, repeated and surrounding spaces collapse to single spaces', async () => {
    const { route, errors } = await scanRoute(
      `export const route = { kind: 'task' }\nexport const schedule = ${JSON.stringify(' */5\t*  * * * ')}\nexport async function POST() {}\n`,
    )
    expect(errors).toEqual([])
    expect(route.schedule).toBe('*/5 * * * *')
  })

  test('route.schedule and the schedule export that differ only in spacing do not conflict', async () => {
    const source = `export const route = { kind: 'task', schedule: '0 0 * * *' }\nexport const schedule = '0  0 * * *'\nexport async function POST() {}\n`
    const { route, errors } = await scanRoute(source)
    expect(errors).toEqual([])
    expect(route.warnings).toEqual([])
    expect(route.schedule).toBe('0 0 * * *')
  })
})

describe('on', () => {
  const RULE = `an event name is 1 to 128 letters, digits, '.', '-', '_' or '/', such as 'order.paid'`
  const task = (on: string) => `export const kind = 'task'\nexport const on = ${on}\nexport async function POST() {}\n`

  test('one event name is read as a list of one', async () => {
    const { route, errors } = await scanRoute(task(`'order.paid'`))
    expect(errors).toEqual([])
    expect(route.on).toEqual(['order.paid'])
  })

  test('a list of event names is read in its order', async () => {
    const { route, errors } = await scanRoute(task(`['order.paid', 'order.refunded', 'stripe/invoice.paid'] as const`))
    expect(errors).toEqual([])
    expect(route.on).toEqual(['order.paid', 'order.refunded', 'stripe/invoice.paid'])
  })

  test('on may also sit inside route', async () => {
    const { route, errors } = await scanRoute(
      `export const route = { kind: 'task', on: ['user.signed_up'] }\nexport async function POST() {}\n`,
    )
    expect(errors).toEqual([])
    expect(route.warnings).toEqual([])
    expect(route.on).toEqual(['user.signed_up'])
  })

  test('a task without on has none, and so does a route that is not a task', async () => {
    expect((await scanRoute(`export const kind = 'task'\nexport async function POST() {}\n`)).route.on).toBeNull()
    expect((await scanRoute(`export function GET() {}\n`)).route.on).toBeNull()
  })

  test('a bad event name is an error at the name that states the rule', async () => {
    const source = task(`'order paid'`)
    const { route, errors } = await scanRoute(source)
    expect(errors).toEqual([`src/api/route.ts:2:19: on: ${RULE} (got "order paid")`])
    expect(route.on).toBeNull()
  })

  test('a bad name in a list is an error at that entry', async () => {
    const source = task(`['order.paid', 'order/paid?']`)
    const { errors } = await scanRoute(source)
    expect(errors).toEqual([`src/api/route.ts:${at(source, `'order/paid?'`)}: on: ${RULE} (got "order/paid?")`])
  })

  test.each([
    ['an empty string', `''`, `on: ${RULE} (got "")`],
    ['a name past 128 characters', `'${'a'.repeat(129)}'`, `on: ${RULE} (got "${'a'.repeat(57)}...")`],
    [
      'a number',
      `5`,
      `on must be an event name or a non-empty list of them, such as 'order.paid' or ['order.paid', 'order.refunded'] (got 5)`,
    ],
  ])('%s is rejected with the rule', async (_, value, message) => {
    const { errors } = await scanRoute(task(value))
    expect(errors).toEqual([`src/api/route.ts:2:19: ${message}`])
  })

  test('an empty list is an error: it would start the task on nothing', async () => {
    const { route, errors } = await scanRoute(`export const route = { kind: 'task', on: [] }\nexport async function POST() {}\n`)
    expect(errors).toEqual([
      `src/api/route.ts:1:42: on must be an event name or a non-empty list of them, such as 'order.paid' or ['order.paid', 'order.refunded'] (got an array)`,
    ])
    expect(route.on).toBeNull()
  })

  test('a name listed twice is an error at its second entry', async () => {
    const source = task(`['order.paid', 'order.refunded', 'order.paid']`)
    const { errors } = await scanRoute(source)
    expect(errors).toEqual([`src/api/route.ts:${at(source, `'order.paid'`, `'order.refunded'`)}: on names the event "order.paid" twice`])
  })

  test.each([
    [
      'a variable',
      `const EVENTS = ['order.paid']\n`,
      'EVENTS',
      'on must be a static literal, not a reference to EVENTS; write the value inline',
    ],
    ['a call', '', `events('order')`, `on must be a static literal, not a call (events('order')); write the value itself`],
    [
      'a template with an expression',
      `const kind = 'paid'\n`,
      '`order.${kind}`',
      'on must be a quoted string, not a template literal (`order.${kind}`)',
    ],
    [
      'a variable in a list',
      `const PAID = 'order.paid'\n`,
      `['order.refunded', PAID]`,
      'on[1] must be a static literal, not a reference to PAID; write the value inline',
    ],
  ])('%s is not static, and is an error at the value', async (_, before, value, message) => {
    const source = `${before}export const route = { kind: 'task' }\nexport const on = ${value}\nexport async function POST() {}\n`
    const { route, errors } = await scanRoute(source)
    const needle = value.startsWith('[') ? 'PAID]' : value
    expect(errors).toEqual([`src/api/route.ts:${at(source, needle, 'export const on')}: ${message}`])
    expect(route.on).toBeNull()
  })

  test('an on export that is imported is an error: the scanner does not follow imports', async () => {
    const { errors } = await scanRoute(`import { on } from './events.ts'\nexport const kind = 'task'\nexport { on }\n`)
    expect(errors).toEqual([
      'src/api/route.ts:3:10: on is imported from another module; declare it in this file, the scanner does not follow imports',
    ])
  })

  test('on on a route that is not a task is an error at the value', async () => {
    const source = `export const on = 'order.paid'\nexport const route = { compute: { class: 'function' }, on: ['order.paid'] }\nexport function GET() {}\n`
    const { route, errors } = await scanRoute(source)
    expect(errors).toEqual([
      `src/api/route.ts:1:19: on applies to tasks only, but this file declares no kind, so it is a serverless route; add kind: 'task' to the route export if it is a task, or remove on`,
      `src/api/route.ts:${at(source, `['order.paid']`)}: route.on applies to tasks only, but this file declares no kind, so it is a serverless route; add kind: 'task' to the route export if it is a task, or remove route.on`,
    ])
    expect(route.on).toBeNull()
  })

  test('route.on and an on export that differ: route.on wins, with a warning', async () => {
    const { route, errors } = await scanRoute(
      `export const route = { kind: 'task', on: ['order.refunded'] }\nexport const on = 'order.paid'\nexport async function POST() {}\n`,
    )
    expect(errors).toEqual([])
    expect(route.on).toEqual(['order.refunded'])
    expect(route.warnings).toEqual([
      `route.on (['order.refunded']) and the on export ('order.paid') differ; route.on wins, remove one of them`,
    ])
  })

  test('route.on and an on export that name the same events in another order do not conflict', async () => {
    const { route, errors } = await scanRoute(
      `export const route = { kind: 'task', on: ['b.done', 'a.done'] }\nexport const on = ['a.done', 'b.done']\nexport async function POST() {}\n`,
    )
    expect(errors).toEqual([])
    expect(route.warnings).toEqual([])
    expect(route.on).toEqual(['b.done', 'a.done'])
  })
})

describe('timezone', () => {
  test('an IANA zone is kept for tasks', async () => {
    const { route } = await scanRoute(
      `export const route = { kind: 'task', timezone: 'America/New_York' }\nexport const schedule = '0 8 * * *'\nexport async function POST() {}\n`,
    )
    expect(route.timezone).toBe('America/New_York')
  })

  test('an unknown zone is an error at its position', async () => {
    const source = `export const route = { kind: 'task', timezone: 'Mars/Olympus' }\n`
    const { errors } = await scanRoute(source)
    expect(errors).toEqual([
      `src/api/route.ts:${at(source, `'Mars`)}: route.timezone must be an IANA time zone such as 'Europe/Berlin' or 'UTC' (got "Mars/Olympus")`,
    ])
  })
})

describe('origins', () => {
  test('entries are normalized to bare origins, duplicates dropped', async () => {
    const { route, errors } = await scanRoute(
      `export const route = { kind: 'hot', origins: ['https://Example.com/', 'https://example.com:443/app', 'http://localhost:3000/x', 'wss://live.example.com:8443'] }\nexport function websocket() {}\n`,
    )
    expect(errors).toEqual([])
    expect(route.origins).toEqual(['https://example.com', 'http://localhost:3000', 'wss://live.example.com:8443'])
  })

  test('an empty list is preserved: it denies every browser origin', async () => {
    const { route } = await scanRoute(`export const route = { kind: 'hot', origins: [] }\nexport function websocket() {}\n`)
    expect(route.origins).toEqual([])
  })

  test('unset origins stay null', async () => {
    const { route } = await scanRoute(`export function websocket() {}\n`)
    expect(route.origins).toBeNull()
  })

  test.each([
    [
      'an identifier',
      `const SITE = 'https://a.example'\nexport const route = { kind: 'hot', origins: [SITE] }\n`,
      'SITE]',
      'not a reference to SITE',
    ],
    ['a call', `export const route = { kind: 'hot', origins: [process.env.ORIGIN.trim()] }\n`, 'process', 'not a call'],
    ['a template literal', "export const route = { kind: 'hot', origins: [`https://${host}`] }\n", '`https', 'not a template literal'],
    [
      'a string that is not a URL',
      `export const route = { kind: 'hot', origins: ['example.com'] }\n`,
      `'example.com'`,
      'route.origins entry "example.com" is not an http(s) or ws(s) URL',
    ],
    ['a non-web URL', `export const route = { kind: 'hot', origins: ['ftp://example.com'] }\n`, `'ftp:`, 'is not an http(s) or ws(s) URL'],
    ['a number', `export const route = { kind: 'hot', origins: [443] }\n`, '443', 'route.origins entries must be quoted URL strings'],
    ['a non-array', `export const route = { kind: 'hot', origins: 'https://a.example' }\n`, `'https`, 'route.origins must be an array'],
  ])('%s is rejected at its position', async (_, source, needle, message) => {
    const { errors } = await scanRoute(`${source}export function websocket() {}\n`)
    expect(errors).toHaveLength(1)
    expect(errors[0]).toMatch(new RegExp(`^src/api/route\\.ts:${at(source, needle, 'origins')}: `))
    expect(errors[0]).toContain(message)
  })

  test('every bad entry is reported', async () => {
    const source = `export const route = {\n  kind: 'hot',\n  origins: ['nope', 'https://ok.example', ORIGIN, 'also nope'],\n}\n`
    const { errors } = await scanRoute(source)
    expect(errors.map((e) => e.split(': ')[0])).toEqual([`src/api/route.ts:3:13`, `src/api/route.ts:3:43`, `src/api/route.ts:3:51`])
  })
})

describe('flow control', () => {
  test('concurrency, rateLimit and debounce of a task are read, resolved and listed', async () => {
    const { route, errors } = await scanRoute(
      `export const route = {\n  kind: 'task',\n  concurrency: { limit: 1, key: 'input.userId' },\n  rateLimit: { limit: 10, periodSeconds: 60 },\n  debounce: { seconds: 30, key: 'input.userId' },\n} as const\nexport async function POST() {}\n`,
    )
    expect(errors).toEqual([])
    expect(route.warnings).toEqual([])
    expect(route.flow).toEqual({
      concurrency: { limit: 1, key: 'input.userId' },
      rateLimit: { limit: 10, periodSeconds: 60 },
      debounce: { seconds: 30, key: 'input.userId' },
    })
  })

  test('a number is the concurrency limit; a task without flow fields has none', async () => {
    expect(
      (await scanRoute(`export const route = { kind: 'task', concurrency: 5 }\nexport async function POST() {}\n`)).route.flow,
    ).toEqual({
      concurrency: { limit: 5 },
    })
    expect((await scanRoute(`export const route = { kind: 'task' }\nexport async function POST() {}\n`)).route.flow).toEqual({})
  })

  test.each([
    ['concurrency: 0', '0', 'route.concurrency must be a whole number of runs, 1 or more, or { limit, key?, perKey? }'],
    [
      'concurrency: { limit: 2, perKey: 1 }',
      '{ limit: 2',
      "route.concurrency.perKey needs a key, the input field whose values take turns, such as { limit: 10, key: 'input.tenantId', perKey: 2 }",
    ],
    [
      `concurrency: { limit: 2, key: 'input.t', perKey: 3 }`,
      '{ limit: 2',
      'route.concurrency.perKey must be a whole number of runs from 1 to limit (2), the most one key runs at once (got 3)',
    ],
    ['concurrency: 2.5', '2.5', 'route.concurrency must be a whole number of runs'],
    [
      `concurrency: { limit: 2, key: 'userId' }`,
      '{ limit: 2',
      `route.concurrency.key must be a dotted path into the task's input such as 'input.userId' (got "userId")`,
    ],
    ['concurrency: { limit: 0 }', '{ limit: 0', 'route.concurrency.limit must be a whole number of runs, 1 or more (got 0)'],
    ['rateLimit: { limit: 10 }', '{ limit: 10', 'route.rateLimit.periodSeconds must be a number of seconds above 0'],
    ['rateLimit: 10', '10', 'route.rateLimit must be { limit, periodSeconds, key? }'],
    [
      'rateLimit: { limit: 1, periodSeconds: 1, window: 2 }',
      '{ limit: 1',
      'route.rateLimit has no field "window"; its fields are limit, periodSeconds, key',
    ],
    [
      'debounce: { seconds: 0 }',
      '{ seconds: 0',
      'route.debounce.seconds must be a number of seconds above 0 and at most 31536000 (365 days) (got 0)',
    ],
    [`debounce: { seconds: 5, key: 7 }`, '{ seconds: 5', 'route.debounce.key must be a dotted path'],
    [
      'priorityAging: 0',
      '0',
      'route.priorityAging must be the priority points a queued run gains per second it waits, above 0 and at most 1000 (default 1), or false for strict priority order (got 0)',
    ],
    ['priorityAging: true', 'true', 'route.priorityAging must be the priority points a queued run gains per second it waits'],
    ['priorityAging: 5000', '5000', 'above 0 and at most 1000 (default 1), or false for strict priority order (got 5000)'],
  ])('%s is rejected at its position', async (field, needle, message) => {
    const source = `export const route = { kind: 'task', ${field} }\n`
    const { errors } = await scanRoute(`${source}export async function POST() {}\n`)
    expect(errors).toHaveLength(1)
    expect(errors[0]).toMatch(new RegExp(`^src/api/route\\.ts:${at(source, needle, field.split(':')[0])}: `))
    expect(errors[0]).toContain(message)
  })

  test('priorityAging is read as points per second, or false for strict order, and reaches the task', async () => {
    for (const priorityAging of ['0.5', 'false']) {
      const source = `export const route = { kind: 'task', concurrency: 2, priorityAging: ${priorityAging} }\nexport async function POST() {}\n`
      const { route, errors } = await scanRoute(source)
      expect(errors).toEqual([])
      expect(route.warnings).toEqual([])
      expect(route.flow).toEqual({ concurrency: { limit: 2 }, priorityAging: JSON.parse(priorityAging) })
      const rt = createTaskRuntime({ routes: [{ ...route, module: { route: { kind: 'task' }, POST: () => 1 } }], env: {} })
      expect(rt.tasks.get('route')?.flow).toEqual({ concurrency: { limit: 2 }, priorityAging: JSON.parse(priorityAging) })
      await rt.close()
    }
  })

  test('flow fields on a route that is not a task are an error at the value', async () => {
    const { route, errors } = await scanRoute(`export const route = { concurrency: 2 }\nexport function GET() {}\n`)
    expect(errors).toEqual([
      `src/api/route.ts:1:37: route.concurrency applies to tasks only, but this file declares no kind, so it is a serverless route; add kind: 'task' to the route export if it is a task, or remove route.concurrency`,
    ])
    expect(route.flow).toBeNull()
  })

  test('the runtime reads the same rule for routes it was handed without a scan', async () => {
    const routes = [{ path: '/api/bad', module: { route: { kind: 'task' as const, concurrency: 0 }, POST: () => 1 } }]
    expect(() => createTaskRuntime({ routes, env: {} })).toThrow('route.concurrency must be a whole number of runs, 1 or more')
    const aging = [{ path: '/api/bad', module: { route: { kind: 'task' as const, priorityAging: -1 }, POST: () => 1 } }]
    expect(() => createTaskRuntime({ routes: aging, env: {} })).toThrow(
      'Task "bad" (/api/bad): route.priorityAging must be the priority points a queued run gains per second it waits',
    )
  })
})
