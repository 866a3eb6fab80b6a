/**
 * Tags, metadata and search on the task admin surface, and the bulk
 * actions by filter, over a real server on port 0 with the task secret.
 */
import * as v from 'valibot'
import { describe, expect, it } from 'vitest'
import { MemoryRunStore, type RuntimeApiRoute, type TaskContext } from '../../src/index.ts'
import { serve, until } from './_helpers.ts'

const SECRET = 's3cret-0123456789abcdef0123456789ab'
const AUTH = { authorization: `Bearer ${SECRET}` }

const ROUTES: RuntimeApiRoute[] = [
  {
    path: '/api/jobs/wait',
    module: {
      kind: 'task',
      input: v.object({ n: v.number() }),
      POST: async (ctx: TaskContext<{ n: number }>) => {
        await ctx.metadata.set('stage', 'waiting')
        await ctx.metadata.set('n', ctx.input.n)
        await ctx.step.waitForToken('go', { timeoutSeconds: 3600 })
        return 'done'
      },
    },
  },
  {
    path: '/api/jobs/fail',
    module: {
      kind: 'task',
      route: { kind: 'task', retries: 0 },
      POST: () => {
        throw new Error('no')
      },
    },
  },
]

type Server = Awaited<ReturnType<typeof serve>>

const start = () => serve({ apiRoutes: ROUTES, env: { NODE_ENV: 'production', SVC_TASK_SECRET: SECRET }, store: new MemoryRunStore() })

async function call(server: Server, method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(`${server.url}${path}`, {
    method,
    headers: { ...AUTH, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  return { status: res.status, body: await res.json() }
}

async function startRuns(server: Server, task: string, count: number, tags: string): Promise<string[]> {
  const ids: string[] = []
  for (let n = 0; n < count; n++) {
    const res = await call(server, 'POST', `/__tasks/${task}`, { n }, { 'svc-tags': tags })
    expect(res.status).toBe(202)
    ids.push(res.body.id)
  }
  return ids
}

const listed = async (server: Server, query: string) => {
  const res = await call(server, 'GET', `/__tasks/runs?${query}`)
  expect(res.status).toBe(200)
  return (res.body.runs as { id: string }[]).map((run) => run.id)
}

describe('run search over HTTP', () => {
  it('finds runs by tag, metadata and creation time, and lists their tags', async () => {
    const server = await start()
    const acme = await startRuns(server, 'jobs.wait', 3, 'tenant:acme, plan:pro')
    const other = await startRuns(server, 'jobs.wait', 2, 'tenant:other')
    await until(async () => (await listed(server, 'metadata.stage=waiting')).length === 5)
    expect(await listed(server, 'tag=tenant:acme')).toEqual([...acme].reverse())
    expect(await listed(server, 'tag=tenant:acme&tag=plan:pro&metadata.n=1')).toEqual([acme[1]])
    expect(await listed(server, 'tag=tenant:other&status=suspended')).toEqual([...other].reverse())
    const all = await call(server, 'GET', '/__tasks/runs?tag=tenant:acme&limit=1')
    expect(all.body.runs[0]).toMatchObject({ id: acme[2], tags: ['tenant:acme', 'plan:pro'] })
    const record = await call(server, 'GET', `/__tasks/runs/${acme[0]}`)
    expect(record.body).toMatchObject({ tags: ['tenant:acme', 'plan:pro'], metadata: { stage: 'waiting', n: 0 } })
    const future = new Date(Date.now() + 60_000).toISOString()
    expect(await listed(server, `from=${future}`)).toEqual([])
    expect(await listed(server, `to=${future}&tag=tenant:other`)).toEqual([...other].reverse())
  })

  it('answers a bad filter or tag with 400 naming the fix', async () => {
    const server = await start()
    expect(await call(server, 'GET', '/__tasks/runs?tags=a')).toMatchObject({
      status: 400,
      body: { code: 'INVALID_QUERY', error: expect.stringMatching(/Unknown query parameter "tags".*tag \(repeatable\)/) },
    })
    expect(await call(server, 'GET', '/__tasks/runs?tag=has%20space')).toMatchObject({
      status: 400,
      body: { error: expect.stringMatching(/no space or comma/) },
    })
    expect(await call(server, 'GET', '/__tasks/runs?from=yesterday')).toMatchObject({
      status: 400,
      body: { error: expect.stringMatching(/from must be an instant/) },
    })
    const badTags = await call(server, 'POST', '/__tasks/jobs.wait', { n: 1 }, { 'svc-tags': 'a,b,c,d,e,f,g,h,i,j,k' })
    expect(badTags).toMatchObject({ status: 400, body: { code: 'INVALID_OPTIONS', error: expect.stringMatching(/Svc-Tags.*at most 10/) } })
  })
})

describe('bulk actions by filter over HTTP', () => {
  it('cancels the live runs of a tag a page at a time, after a dry run that changes nothing', async () => {
    const server = await start()
    const acme = await startRuns(server, 'jobs.wait', 5, 'tenant:acme')
    const other = await startRuns(server, 'jobs.wait', 1, 'tenant:other')
    await until(async () => (await listed(server, 'status=suspended')).length === 6)
    const dry = await call(server, 'POST', '/__tasks/runs/cancel', { filter: { tag: 'tenant:acme' }, dryRun: true, limit: 3 })
    expect(dry).toMatchObject({ status: 200, body: { action: 'cancel', dryRun: true, matched: 3, cursor: acme[2] } })
    expect(dry.body.runs.map((run: { id: string }) => run.id)).toEqual([acme[4], acme[3], acme[2]])
    expect(dry.body.runs[0].outcome).toBeUndefined()
    expect(await listed(server, 'status=suspended')).toHaveLength(6)

    const first = await call(server, 'POST', '/__tasks/runs/cancel', { filter: { tag: 'tenant:acme' }, limit: 3 })
    expect(first.body).toMatchObject({ dryRun: false, matched: 3, cursor: acme[2] })
    expect(first.body.runs.map((run: { outcome: string }) => run.outcome)).toEqual(['cancelled', 'cancelled', 'cancelled'])
    const rest = await call(server, 'POST', '/__tasks/runs/cancel', { filter: { tag: 'tenant:acme' }, limit: 3, cursor: first.body.cursor })
    expect(rest.body).toMatchObject({ matched: 2 })
    expect(rest.body.cursor).toBeUndefined()
    expect(await listed(server, 'tag=tenant:acme&status=cancelled')).toEqual([...acme].reverse())
    expect(await listed(server, 'status=suspended')).toEqual(other)
    // Nothing live is left under the tag: a second call finds none.
    expect((await call(server, 'POST', '/__tasks/runs/cancel', { filter: { tag: 'tenant:acme' } })).body).toMatchObject({
      matched: 0,
      runs: [],
    })
  })

  it('replays the failed runs a filter finds and reports each new run', async () => {
    const server = await start()
    const failed = await startRuns(server, 'jobs.fail', 2, 'batch:7')
    await until(async () => (await listed(server, 'tag=batch:7&status=failed')).length === 2)
    const res = await call(server, 'POST', '/__tasks/runs/replay', { filter: { tag: ['batch:7'], task: 'jobs.fail' } })
    expect(res.status).toBe(200)
    expect(res.body).toMatchObject({ action: 'replay', matched: 2 })
    for (const item of res.body.runs) {
      expect(item).toMatchObject({ outcome: 'replayed', replayedAs: expect.any(String), status: 'failed' })
      const again = await call(server, 'GET', `/__tasks/runs/${item.replayedAs}`)
      expect(again.body).toMatchObject({ replayOf: item.id, tags: ['batch:7'] })
    }
    expect(res.body.runs.map((item: { id: string }) => item.id)).toEqual([...failed].reverse())
  })

  it('refuses an empty filter, an unknown field and a limit past the bound with 400', async () => {
    const server = await start()
    const cases: [unknown, RegExp][] = [
      [{ filter: {} }, /at least one of task, status/],
      [{}, /filter must be an object/],
      [{ filter: { tag: 'a' }, limit: 5000 }, /limit must be a whole number from 1 to 1000/],
      [{ filter: { tag: 'a' }, force: true }, /"force" is not one of them/],
      [{ filter: { tags: 'a' } }, /filter takes task, status, version, tag, metadata, from, to \(got "tags"\)/],
      [{ filter: { status: 'completed' } }, /a cancel acts on live runs/],
    ]
    for (const [body, message] of cases) {
      expect(await call(server, 'POST', '/__tasks/runs/cancel', body)).toMatchObject({
        status: 400,
        body: { error: expect.stringMatching(message) },
      })
    }
    expect(await call(server, 'POST', '/__tasks/runs/replay', { filter: { tag: 'a' }, children: 'all' })).toMatchObject({
      status: 400,
      body: { error: expect.stringMatching(/"children" is not one of them/) },
    })
    const unauthorized = await call(server, 'POST', '/__tasks/runs/cancel', { filter: { tag: 'a' } }, { authorization: 'Bearer wrong' })
    expect(unauthorized.status).toBe(401)
  })
})
