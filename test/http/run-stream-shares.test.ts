/**
 * The shares of the event streams (docs/security.md "The event streams"):
 * a run token is handed to a browser, so one token holds at most
 * `runEvents.maxStreamsPerToken` streams and one client address at most
 * `maxStreamsPerAddress` of the run-token streams (429 past either), and
 * run-token streams leave an eighth of `maxStreams` to streams opened with
 * the task secret: whatever tokens hold, the admin's `GET /__tasks/events`
 * and the dashboard still connect.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { createRunToken } from '../../src/index.ts'
import { reportApp, SECRET } from '../client/_runs.ts'
import { serve, type TestServerOptions } from './_helpers.ts'

const ADMIN = { authorization: `Bearer ${SECRET}` }
const PRODUCTION = { NODE_ENV: 'production', SVC_TASK_SECRET: SECRET }

type Server = Awaited<ReturnType<typeof serve>>
const held: AbortController[] = []
/**
 * The answers of the streams opened, held until the test ends: a response
 * nothing references may be collected, and the fetch client then closes
 * its stream, which would free its place early.
 */
const answers: Response[] = []
afterEach(() => {
  for (const stream of held.splice(0)) stream.abort()
  answers.length = 0
})

async function start(options: TestServerOptions = {}): Promise<Server> {
  return serve({ apiRoutes: reportApp().routes, env: PRODUCTION, ...options })
}

/** A run of jobs.report, which waits for a token: it stays live while the streams are held. */
async function liveRun(server: Server): Promise<string> {
  const res = await fetch(`${server.url}/__tasks/jobs.report`, { method: 'POST', headers: ADMIN })
  expect(res.status).toBe(202)
  return ((await res.json()) as { id: string }).id
}

/** Opens a stream and keeps it open until the test ends; resolves to its answer. */
async function open(server: Server, path: string, headers: Record<string, string>): Promise<Response> {
  const stream = new AbortController()
  held.push(stream)
  const answer = await fetch(`${server.url}${path}`, { headers, signal: stream.signal })
  answers.push(answer)
  return answer
}

const runStream = async (server: Server, id: string, token?: string) =>
  open(server, `/__tasks/runs/${id}/stream`, { authorization: `Bearer ${token ?? (await createRunToken(id, { secret: SECRET }))}` })

describe('shares of the event streams', () => {
  it('one run token opening 70 streams gets its 4, then 429; the admin stream and another run still connect', async () => {
    const server = await start()
    const [id, other] = [await liveRun(server), await liveRun(server)]
    const token = await createRunToken(id, { secret: SECRET })
    const answers = await Promise.all(Array.from({ length: 70 }, () => runStream(server, id, token)))
    expect(answers.filter((res) => res.status === 200)).toHaveLength(4)
    const refused = answers.filter((res) => res.status !== 200)
    expect(new Set(refused.map((res) => res.status))).toEqual(new Set([429]))
    const body = (await refused[0].json()) as { code: string; error: string }
    expect(body.code).toBe('TOO_MANY_EVENT_STREAMS')
    expect(body.error).toMatch(/this run token has 4 event streams open, the limit \(runEvents\.maxStreamsPerToken\)/)
    expect(Number(refused[0].headers.get('retry-after'))).toBeGreaterThan(0)
    expect((await open(server, '/__tasks/events', ADMIN)).status).toBe(200)
    expect((await runStream(server, other)).status).toBe(200)
  })

  it('a closed stream gives its token the place back', async () => {
    const server = await start({ runEvents: { maxStreamsPerToken: 1 } })
    const id = await liveRun(server)
    const token = await createRunToken(id, { secret: SECRET })
    expect((await runStream(server, id, token)).status).toBe(200)
    expect((await runStream(server, id, token)).status).toBe(429)
    held.shift()!.abort()
    await expect.poll(async () => (await runStream(server, id, token)).status).toBe(200)
  })

  it('streams opened with run tokens leave an eighth of maxStreams to the task secret', async () => {
    const server = await start({ runEvents: { maxStreams: 16 } })
    const ids = await Promise.all(Array.from({ length: 8 }, () => liveRun(server)))
    // Eight tokens of 4 streams each would take 32: they get 14 between them, leaving 2.
    const answers = await Promise.all(ids.flatMap((id) => Array.from({ length: 4 }, () => runStream(server, id))))
    expect(answers.filter((res) => res.status === 200)).toHaveLength(14)
    const refused = answers.find((res) => res.status !== 200)!
    expect(refused.status).toBe(503)
    expect(((await refused.json()) as { error: string }).error).toMatch(/less 2 kept for the task secret/)
    expect((await open(server, '/__tasks/events', ADMIN)).status).toBe(200)
    expect((await open(server, '/__tasks/events', ADMIN)).status).toBe(200)
    // The secret's streams have all of maxStreams, and no more.
    expect((await open(server, '/__tasks/events', ADMIN)).status).toBe(503)
  })

  it('one client address holds at most maxStreamsPerAddress run-token streams, whichever tokens it has', async () => {
    const server = await start({ runEvents: { maxStreamsPerAddress: 3 } })
    const ids = await Promise.all(Array.from({ length: 4 }, () => liveRun(server)))
    const statuses = []
    for (const id of ids) statuses.push((await runStream(server, id)).status)
    expect(statuses).toEqual([200, 200, 200, 429])
    // The task secret is no run token: its streams are not the address's share.
    expect((await open(server, '/__tasks/events', ADMIN)).status).toBe(200)
  })

  it('checks the new options: a share that is not a positive whole number is a RangeError naming it', async () => {
    await expect(start({ runEvents: { maxStreamsPerToken: 0 } })).rejects.toThrow(
      /runEvents\.maxStreamsPerToken must be a positive whole number \(got 0\)/,
    )
    await expect(start({ runEvents: { maxStreamsPerAddress: 2.5 } })).rejects.toThrow(
      /runEvents\.maxStreamsPerAddress must be a positive whole number \(got 2\.5\)/,
    )
  })
})
