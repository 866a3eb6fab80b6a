import { mkdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildApp, type BuildResult } from '../../src/build/build.ts'
import { toEventBridge } from '../../targets/lambda/schedules.ts'
import { copyFixtureApp } from './_app.ts'

function httpEvent(method: string, path: string, init: { query?: string; body?: string; base64?: boolean; headers?: Record<string, string>; cookies?: string[] } = {}) {
  return {
    version: '2.0',
    routeKey: '$default',
    rawPath: path,
    rawQueryString: init.query ?? '',
    headers: { host: 'abc.lambda-url.eu-west-1.on.aws', ...init.headers },
    cookies: init.cookies,
    body: init.body,
    isBase64Encoded: init.base64 ?? false,
    requestContext: { domainName: 'abc.lambda-url.eu-west-1.on.aws', http: { method, path, sourceIp: '203.0.113.9' } },
  }
}

describe('svc build --target lambda', () => {
  let app: Awaited<ReturnType<typeof copyFixtureApp>>
  let build: BuildResult
  let handler: (event: unknown) => Promise<any>

  beforeAll(async () => {
    app = await copyFixtureApp()
    build = await buildApp({ root: app.root, target: 'lambda' })
    process.env.THEN_TASK_SECRET = 'lambda-secret'
    ;({ handler } = await import(pathToFileURL(join(app.root, '.output/lambda/index.mjs')).href))
  })
  afterAll(async () => {
    delete process.env.THEN_TASK_SECRET
    await app?.cleanup()
  })

  it('leaves hot routes out with the exact warning', () => {
    expect(build.warnings).toEqual([
      '[svc] 1 hot route(s) cannot run on lambda and were not bundled: /api/live — deploy them to a persistent host',
    ])
  })

  it('serves an HTTP API v2 GET event', async () => {
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
    const root = await handler({ ...event, rawPath: '/prod', requestContext: { ...event.requestContext, http: { ...event.requestContext.http, path: '/prod' } } })
    expect(root.statusCode).toBe(200)
    expect(root.body).toContain('<h1>targets app</h1>')
  })

  it('keeps a path whose first segment only looks like the stage', async () => {
    const event = httpEvent('GET', '/production/api/hello')
    const result = await handler({ ...event, requestContext: { ...event.requestContext, stage: 'prod' } })
    expect(result.statusCode).toBe(404)
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
    const auth = { authorization: 'Bearer lambda-secret' }
    const result = await handler(httpEvent('POST', '/__tasks/jobs.slow', { headers: auth }))
    expect(result.statusCode).toBe(202)
    const { id } = JSON.parse(result.body)
    const run = await handler(httpEvent('GET', `/__tasks/${id}`, { headers: auth }))
    expect(JSON.parse(run.body)).toMatchObject({ status: 'completed', result: { slept: 100 } })
  })

  it('validates and runs a task payload', async () => {
    const result = await handler(
      httpEvent('POST', '/__tasks/jobs.double', {
        body: JSON.stringify({ n: 5 }),
        headers: { 'content-type': 'application/json', authorization: 'Bearer lambda-secret' },
      }),
    )
    expect(result.statusCode).toBe(202)
    const { id } = JSON.parse(result.body)
    const run = await handler(httpEvent('GET', `/__tasks/${id}`, { headers: { authorization: 'Bearer lambda-secret' } }))
    expect(JSON.parse(run.body)).toMatchObject({ status: 'completed', result: { doubled: 10 } })
  })

  it('fires cron tasks for a schedule event', async () => {
    const result = await handler({ svcCron: '*/10 * * * *' })
    expect(result).toMatchObject({ ok: true, runs: [{ taskName: 'jobs.tick', status: 'completed' }] })
    const ticks = await handler(httpEvent('GET', '/api/ticks'))
    expect(JSON.parse(ticks.body)).toEqual({ ticks: [{ _cron: true }] })
  })

  it('fires only the tasks of the schedule event\'s time zone', async () => {
    const result = await handler({ svcCron: '*/10 * * * *', svcTimezone: 'Europe/Paris' })
    expect(result).toEqual({ ok: true, runs: [] })
  })

  it('rejects an event it does not know, saying which ones it takes', async () => {
    await expect(handler({ Records: [] })).rejects.toThrow(/HTTP API \(payload 2\.0\).*svcCron/)
  })

  it('writes schedules.json with the EventBridge form of each schedule', async () => {
    const file = JSON.parse(await readFile(join(app.root, '.output/lambda/schedules.json'), 'utf8'))
    expect(file.schedules).toEqual([
      {
        task: 'jobs.tick',
        cron: '*/10 * * * *',
        timezone: 'UTC',
        input: { svcCron: '*/10 * * * *', svcTimezone: 'UTC' },
        scheduleExpression: 'cron(*/10 * * * ? *)',
      },
    ])
  })
})

describe('svc build --target lambda, a scheduled task that fails', () => {
  let app: Awaited<ReturnType<typeof copyFixtureApp>>
  let handler: (event: unknown) => Promise<any>

  beforeAll(async () => {
    app = await copyFixtureApp('failing-cron-app')
    await buildApp({ root: app.root, target: 'lambda' })
    ;({ handler } = await import(pathToFileURL(join(app.root, '.output/lambda/index.mjs')).href))
  })
  afterAll(() => app?.cleanup())

  // EventBridge Scheduler retries, dead-letters and alarms on failed invocations only.
  it('fails the invocation, naming the failed task and its run', async () => {
    const failure: Error = await handler({ svcCron: '0 3 * * *', svcTimezone: 'UTC' }).then(
      () => {
        throw new Error('the invocation succeeded')
      },
      (error: Error) => error,
    )
    expect(failure.message).toMatch(/^Cron "0 3 \* \* \*": 1 of 2 scheduled run\(s\) failed: jobs\.broken \(run [\w-]+: the nightly import failed\)$/)
    expect(failure.message).not.toContain('jobs.fine')
    const runId = failure.message.match(/\(run ([\w-]+)/)![1]
    process.env.THEN_TASK_SECRET = 'lambda-secret'
    try {
      const run = await handler(httpEvent('GET', `/__tasks/${runId}`, { headers: { authorization: 'Bearer lambda-secret' } }))
      expect(JSON.parse(run.body)).toMatchObject({ taskName: 'jobs.broken', status: 'failed', attempts: [{ error: 'the nightly import failed' }] })
    } finally {
      delete process.env.THEN_TASK_SECRET
    }
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
    for (const name of ['a.css', 'b.js', 'img/c.png', 'img/d.png', 'robots.txt', 'z.json']) await writeFile(join(app.root, 'public', name), name)
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
