import { mkdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { gunzipSync, gzipSync } from 'node:zlib'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildApp } from '../../src/build/build.ts'
import type { RuntimeApiRoute } from '../../src/index.ts'
import { createLambdaHandler } from '../../targets/lambda/runtime.ts'
import { toEventBridge } from '../../targets/lambda/schedules.ts'
import { builtJson, builtOnce, copyFixtureApp, writeApp, ZONED_TASKS } from './_app.ts'
import { TASK_SECRET, targetContract } from './contract.ts'

type Handler = (event: unknown) => Promise<any>

const DOMAIN = 'r3pmxmplak.execute-api.us-east-2.amazonaws.com'

/**
 * `request` as API Gateway delivers it to the function: an HTTP API payload
 * 2.0 event on the `$default` stage, in the shape AWS documents. Text bodies
 * travel as text, any other body base64, as API Gateway sends them.
 */
async function httpApiEvent(request: Request) {
  const url = new URL(request.url)
  const headers: Record<string, string> = { host: DOMAIN }
  // Payload 2.0 moves cookies to their own array and joins repeated headers with commas.
  request.headers.forEach((value, name) => {
    if (name !== 'cookie') headers[name] = value
  })
  const cookies = request.headers.get('cookie')?.split(/;\s*/)
  const bytes = request.body ? Buffer.from(await request.arrayBuffer()) : undefined
  const text = /^(text\/|application\/json)/.test(request.headers.get('content-type') ?? '')
  const query: Record<string, string> = {}
  for (const [name, value] of url.searchParams) query[name] = name in query ? `${query[name]},${value}` : value
  const now = new Date()
  return {
    version: '2.0',
    routeKey: '$default',
    rawPath: url.pathname,
    rawQueryString: url.search.slice(1),
    ...(cookies ? { cookies } : {}),
    headers,
    ...(url.search ? { queryStringParameters: query } : {}),
    requestContext: {
      accountId: '123456789012',
      apiId: 'r3pmxmplak',
      domainName: DOMAIN,
      domainPrefix: 'r3pmxmplak',
      http: {
        method: request.method,
        path: url.pathname,
        protocol: 'HTTP/1.1',
        sourceIp: '203.0.113.9',
        userAgent: headers['user-agent'] ?? '',
      },
      requestId: crypto.randomUUID(),
      routeKey: '$default',
      stage: '$default',
      time: now.toUTCString(),
      timeEpoch: now.getTime(),
    },
    ...(bytes ? { body: bytes.toString(text ? 'utf8' : 'base64') } : {}),
    isBase64Encoded: bytes !== undefined && !text,
  }
}

/** The function's result as the client gets it from API Gateway. */
function toResponse(result: {
  statusCode: number
  headers?: Record<string, string>
  cookies?: string[]
  body?: string
  isBase64Encoded?: boolean
}): Response {
  const headers = new Headers(result.headers)
  for (const cookie of result.cookies ?? []) headers.append('set-cookie', cookie)
  const body =
    result.body === undefined || result.body === '' ? null : result.isBase64Encoded ? Buffer.from(result.body, 'base64') : result.body
  return new Response(body, { status: result.statusCode, headers })
}

function httpEvent(
  method: string,
  path: string,
  init: { query?: string; body?: string; base64?: boolean; headers?: Record<string, string> } = {},
) {
  return {
    version: '2.0',
    routeKey: '$default',
    rawPath: path,
    rawQueryString: init.query ?? '',
    headers: { host: 'abc.lambda-url.eu-west-1.on.aws', ...init.headers },
    body: init.body,
    isBase64Encoded: init.base64 ?? false,
    requestContext: { domainName: 'abc.lambda-url.eu-west-1.on.aws', http: { method, path, sourceIp: '203.0.113.9' } },
  }
}

const built = builtOnce('lambda')

/**
 * A fresh instance of the built function, as a new Lambda execution
 * environment loads it: the query makes a module instance of its own.
 */
async function loadHandler(instance: string): Promise<Handler> {
  process.env.SVC_TASK_SECRET = TASK_SECRET
  const url = pathToFileURL(join((await built()).root, '.output/lambda/index.mjs'))
  url.search = instance
  return ((await import(url.href)) as { handler: Handler }).handler
}

afterAll(() => {
  delete process.env.SVC_TASK_SECRET
})

targetContract({
  name: 'lambda',
  async start() {
    const handler = await loadHandler('contract')
    return {
      fetch: async (request) => toResponse(await handler(await httpApiEvent(request))),
      // EventBridge Scheduler counts an invocation that rejects as failed
      // (and retries it, then dead-letters it); a resolved one succeeded.
      cron: (expression) =>
        handler({ svcCron: expression }).then(
          () => ({ ok: true }),
          (error: Error) => ({ ok: false, error: error.message }),
        ),
      close: async () => {},
    }
  },
})

describe('svc build --target lambda', () => {
  let handler: Handler
  const auth = { authorization: `Bearer ${TASK_SECRET}` }

  beforeAll(async () => {
    handler = await loadHandler('particulars')
  })

  it('leaves hot routes out with the exact warning', async () => {
    expect((await built()).build.warnings).toEqual([
      '[svc] 1 hot route(s) cannot run on lambda and were not bundled: /api/live — deploy them to a persistent host',
    ])
  })

  it('answers an HTTP API v2 event with a text JSON body', async () => {
    const result = await handler(httpEvent('GET', '/api/hello', { query: 'name=lambda' }))
    expect(result.statusCode).toBe(200)
    expect(result.isBase64Encoded).toBe(false)
    expect(result.headers['content-type']).toMatch(/application\/json/)
    expect(JSON.parse(result.body)).toEqual({ hello: 'lambda' })
  })

  // An HTTP API with a named stage is invoked at https://<api>.execute-api.<region>.amazonaws.com/<stage>/…
  // and puts that stage segment in rawPath; the $default stage is served at the root.
  // The event is AWS's published payload 2.0 example with a named stage.
  it('routes an HTTP API event behind a named stage without the stage segment', async () => {
    const event = {
      version: '2.0',
      routeKey: 'ANY /{proxy+}',
      rawPath: '/prod/api/hello',
      rawQueryString: 'name=staged',
      headers: {
        accept: '*/*',
        'content-length': '0',
        host: 'r3pmxmplak.execute-api.us-east-2.amazonaws.com',
        'user-agent': 'curl/7.72.0',
        'x-amzn-trace-id': 'Root=1-5f84c7a9-0e7ec2ab1ad2bdc2d1b0e0bd',
        'x-forwarded-for': '205.255.255.176',
        'x-forwarded-port': '443',
        'x-forwarded-proto': 'https',
      },
      queryStringParameters: { name: 'staged' },
      pathParameters: { proxy: 'api/hello' },
      requestContext: {
        accountId: '123456789012',
        apiId: 'r3pmxmplak',
        domainName: 'r3pmxmplak.execute-api.us-east-2.amazonaws.com',
        domainPrefix: 'r3pmxmplak',
        http: { method: 'GET', path: '/prod/api/hello', protocol: 'HTTP/1.1', sourceIp: '205.255.255.176', userAgent: 'curl/7.72.0' },
        requestId: 'JhNQ-h5dsQ0EMiA=',
        routeKey: 'ANY /{proxy+}',
        stage: 'prod',
        time: '10/Oct/2020:21:12:09 +0000',
        timeEpoch: 1602364329898,
      },
      isBase64Encoded: false,
    }
    const result = await handler(event)
    expect(result.statusCode).toBe(200)
    expect(JSON.parse(result.body)).toEqual({ hello: 'staged' })
    const root = await handler({
      ...event,
      rawPath: '/prod',
      requestContext: { ...event.requestContext, http: { ...event.requestContext.http, path: '/prod' } },
    })
    expect(root.statusCode).toBe(200)
    expect(root.body).toContain('<h1>targets app</h1>')
  })

  // API Gateway and function URLs write the scheme the client used as the last entry
  // of X-Forwarded-Proto; an entry before it is the client's own and proves nothing.
  it.each([
    [undefined, 'https'],
    ['http', 'http'],
    ['https', 'https'],
    ['https, http', 'http'],
    ['http, https', 'https'],
    ['gopher', 'https'],
  ])('X-Forwarded-Proto %j gives the app the scheme %s', async (proto, scheme) => {
    const headers: Record<string, string> = proto === undefined ? {} : { 'x-forwarded-proto': proto }
    const result = await handler(httpEvent('GET', '/api/origin', { headers }))
    expect(JSON.parse(result.body)).toEqual({ origin: `${scheme}://abc.lambda-url.eu-west-1.on.aws` })
  })

  it('keeps a path whose first segment only looks like the stage', async () => {
    const event = httpEvent('GET', '/production/api/hello')
    const result = await handler({ ...event, requestContext: { ...event.requestContext, stage: 'prod' } })
    expect(result.statusCode).toBe(404)
  })

  it('keeps the path on a custom domain, which leaves the stage out of rawPath', async () => {
    const event = httpEvent('GET', '/api/hello', { query: 'name=custom' })
    const custom = { ...event.requestContext, domainName: 'api.example.com', domainPrefix: 'api', stage: 'api' }
    const result = await handler({ ...event, requestContext: custom })
    expect(JSON.parse(result.body)).toEqual({ hello: 'custom' })
  })

  it('keeps the path as is on the $default stage', async () => {
    const event = httpEvent('GET', '/api/hello', { query: 'name=default' })
    const result = await handler({ ...event, requestContext: { ...event.requestContext, stage: '$default' } })
    expect(JSON.parse(result.body)).toEqual({ hello: 'default' })
  })

  it('decodes a base64 body from a function URL event', async () => {
    const body = Buffer.from(JSON.stringify({ a: 1 })).toString('base64')
    const result = await handler(httpEvent('POST', '/api/hello', { body, base64: true, headers: { 'content-type': 'application/json' } }))
    expect(result.statusCode).toBe(201)
    expect(JSON.parse(result.body)).toEqual({ echo: { a: 1 } })
  })

  it('runs a task to its end before returning the 202 answer, since Lambda freezes after it', async () => {
    const result = await handler(httpEvent('POST', '/__tasks/jobs.slow', { headers: auth }))
    expect(result.statusCode).toBe(202)
    const { id } = JSON.parse(result.body)
    const run = await handler(httpEvent('GET', `/__tasks/${id}`, { headers: auth }))
    expect(JSON.parse(run.body)).toMatchObject({ status: 'completed', result: { slept: 100 } })
  })

  it('resolves a schedule event with the summary of the runs it fired', async () => {
    const result = await handler({ svcCron: '*/10 * * * *' })
    expect(result).toEqual({ ok: true, runs: [{ id: expect.any(String), taskName: 'jobs.tick', status: 'completed' }] })
  })

  it("fires only the tasks of the schedule event's time zone", async () => {
    const result = await handler({ svcCron: '*/10 * * * *', svcTimezone: 'Europe/Paris' })
    expect(result).toEqual({ ok: true, runs: [] })
  })

  // EventBridge Scheduler retries, dead-letters and alarms on failed invocations only.
  it('fails the invocation of a schedule whose task fails, naming the failed task and its run', async () => {
    const failure: Error = await handler({ svcCron: '0 3 * * *', svcTimezone: 'UTC' }).then(
      () => {
        throw new Error('the invocation succeeded')
      },
      (error: Error) => error,
    )
    expect(failure.message).toMatch(
      /^Cron "0 3 \* \* \*": 1 of 2 scheduled run\(s\) failed: jobs\.import \(run [\w-]+: the nightly import failed\)$/,
    )
    const runId = failure.message.match(/\(run ([\w-]+)/)![1]
    const run = await handler(httpEvent('GET', `/__tasks/${runId}`, { headers: auth }))
    expect(JSON.parse(run.body)).toMatchObject({
      taskName: 'jobs.import',
      status: 'failed',
      attempts: [{ error: 'the nightly import failed' }],
    })
  })

  it('answers the tick event; on the memory store it has nothing to sweep', async () => {
    expect(await handler({ svcTick: true })).toEqual({ ok: true, inFlight: 0 })
  })

  it('rejects an event it does not know, saying which ones it takes', async () => {
    await expect(handler({ Records: [] })).rejects.toThrow(/HTTP API \(payload 2\.0\).*svcCron.*svcTick/)
  })

  it('writes schedules.json with the EventBridge form and the invocation input of each schedule', async () => {
    const file = JSON.parse(await readFile(join((await built()).root, '.output/lambda/schedules.json'), 'utf8'))
    const nightly = (task: string) => ({
      task,
      cron: '0 3 * * *',
      timezone: 'UTC',
      input: { svcCron: '0 3 * * *', svcTimezone: 'UTC' },
      scheduleExpression: 'cron(0 3 * * ? *)',
    })
    expect(file.schedules).toEqual([
      nightly('jobs.import'),
      nightly('jobs.report'),
      {
        task: 'jobs.tick',
        cron: '*/10 * * * *',
        timezone: 'UTC',
        input: { svcCron: '*/10 * * * *', svcTimezone: 'UTC' },
        scheduleExpression: 'cron(*/10 * * * ? *)',
      },
      {
        tick: true,
        cron: '* * * * *',
        timezone: 'UTC',
        input: { svcTick: true },
        scheduleExpression: 'rate(1 minute)',
        note: expect.stringContaining('SVC_STORE_URL'),
      },
    ])
  })

  it('lists no tick for an app without tasks', async () => {
    const file = await builtJson({ 'src/api/hello.ts': `export const GET = () => 'hi'\n` }, 'lambda', '.output/lambda/schedules.json')
    expect(file.schedules).toEqual([])
  })

  // EventBridge Scheduler takes each schedule's zone from schedules.json.
  it('applies task time zones without a warning', async () => {
    const app = await writeApp(ZONED_TASKS)
    try {
      expect((await buildApp({ root: app.root, target: 'lambda' })).warnings).toEqual([])
    } finally {
      await app.cleanup()
    }
  })
})

describe('Lambda results for bodies that are not plain UTF-8 text', () => {
  const json = JSON.stringify({ message: 'compressed on purpose' })
  // "café" in ISO-8859-1: é is the single byte 0xE9, which is not valid UTF-8.
  const latin1 = new Uint8Array([0x63, 0x61, 0x66, 0xe9])
  const routes: RuntimeApiRoute[] = [
    {
      path: '/api/gzipped',
      module: {
        GET: () => new Response(gzipSync(json), { headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' } }),
      },
    },
    {
      path: '/api/latin1',
      module: { GET: () => new Response(latin1, { headers: { 'content-type': 'text/plain; charset=iso-8859-1' } }) },
    },
    {
      path: '/api/utf8',
      module: { GET: () => new Response('crème brûlée', { headers: { 'content-type': 'text/plain; charset=utf-8' } }) },
    },
  ]
  const handler = createLambdaHandler({ routes, logger: { info() {}, warn() {}, error() {} } })

  // API Gateway and function URLs take a text body as UTF-8: any other bytes must travel base64.
  it('sends a content-encoded body base64, whatever its content type', async () => {
    const result = (await handler(httpEvent('GET', '/api/gzipped'))) as {
      body: string
      isBase64Encoded: boolean
      headers: Record<string, string>
    }
    expect(result.isBase64Encoded).toBe(true)
    expect(result.headers['content-encoding']).toBe('gzip')
    expect(gunzipSync(Buffer.from(result.body, 'base64')).toString()).toBe(json)
  })

  it('sends a text body that is not valid UTF-8 base64, byte for byte', async () => {
    const result = (await handler(httpEvent('GET', '/api/latin1'))) as { body: string; isBase64Encoded: boolean }
    expect(result.isBase64Encoded).toBe(true)
    expect([...Buffer.from(result.body, 'base64')]).toEqual([...latin1])
  })

  it('still sends UTF-8 text as text', async () => {
    const result = (await handler(httpEvent('GET', '/api/utf8'))) as { body: string; isBase64Encoded: boolean }
    expect(result).toMatchObject({ body: 'crème brûlée', isBase64Encoded: false })
  })
})

describe('svc build --target lambda, an app with public/', () => {
  let app: Awaited<ReturnType<typeof copyFixtureApp>>
  beforeAll(async () => {
    app = await copyFixtureApp('static-files-app')
  })
  afterAll(() => app?.cleanup())

  // One function behind API Gateway serves no files; left unsaid, public/ would just vanish.
  it('warns that public/ is not deployed, naming its file and where to serve it from', async () => {
    const { warnings } = await buildApp({ root: app.root, target: 'lambda' })
    expect(warnings).toEqual([
      '[svc] 1 file(s) in public/ cannot be served on lambda and were not bundled: hello.txt — serve them from S3 behind CloudFront, or another static host',
    ])
  })

  it('names the first five files and counts the rest', async () => {
    await mkdir(join(app.root, 'public/img'), { recursive: true })
    for (const name of ['a.css', 'b.js', 'img/c.png', 'img/d.png', 'robots.txt', 'z.json'])
      await writeFile(join(app.root, 'public', name), name)
    const { warnings } = await buildApp({ root: app.root, target: 'lambda' })
    expect(warnings).toEqual([
      '[svc] 7 file(s) in public/ cannot be served on lambda and were not bundled: a.css, b.js, hello.txt, img/c.png, img/d.png and 2 more — serve them from S3 behind CloudFront, or another static host',
    ])
  })
})

describe('EventBridge cron conversion', () => {
  it('puts ? in day-of-week when it is unrestricted', () => {
    expect(toEventBridge('0 5 1 * *').expression).toBe('cron(0 5 1 * ? *)')
  })
  it('puts ? in day-of-month and names weekdays when day-of-week is set', () => {
    expect(toEventBridge('30 9 * * 1-5').expression).toBe('cron(30 9 ? * MON-FRI *)')
    expect(toEventBridge('0 0 * * 0,7').expression).toBe('cron(0 0 ? * SUN,SUN *)')
  })
  it('gives no expression, with a note, when both day fields are restricted', () => {
    expect(toEventBridge('0 0 1 * 1')).toEqual({ expression: null, note: 'EventBridge cannot restrict both day-of-month and day-of-week' })
  })
  it('gives no expression for a weekday range that wraps past Saturday', () => {
    expect(toEventBridge('0 0 * * 5-7').expression).toBeNull()
  })
})
