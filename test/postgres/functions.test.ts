// Lambda and Vercel with SVC_STORE_URL naming a Postgres store: each
// instance is a process of its own, running the built function, and is
// killed (SIGKILL) once it has answered, as a platform freezes or recycles
// it. What a run still waits for is done by the tick of another instance.
import { spawn, type ChildProcess } from 'node:child_process'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import postgres from 'postgres'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { buildApp } from '../../src/build/build.ts'
import { PostgresRunStore } from '../../src/postgres.ts'
import type { RunRecord } from '../../src/types.ts'
import { writeApp } from '../targets/_app.ts'
import { createDatabase } from './_pg.ts'

const SCRIPT = fileURLToPath(new URL('./_function-instance.mjs', import.meta.url))
const TASK_SECRET = 'task-secret-0123456789abcdef0123456789'
const CRON_SECRET = 'cron-secret'

const NIGHTLY = { lambda: '0 3 * * *', vercel: '0 4 * * *' }

const APP: Record<string, string> = {
  'src/api/jobs/nap.ts': `export const kind = 'task'
export async function POST(ctx) {
  const a = await ctx.step.run('a', () => 'a')
  await ctx.step.sleep('nap', 1)
  const b = await ctx.step.run('b', () => 'b')
  return a + b
}
`,
  // Scheduled runs that sleep for a minute: a cron event must not wait through them. One schedule
  // per target, since each tick of a schedule fires once across everything that shares the database.
  ...Object.fromEntries(
    Object.entries(NIGHTLY).map(([target, schedule]) => [
      `src/api/jobs/nightly-${target}.ts`,
      `export const kind = 'task'
export const schedule = '${schedule}'
export async function POST(ctx) {
  await ctx.step.run('a', () => 'a')
  await ctx.step.sleep('nap', 60)
  return 'slept'
}
`,
    ]),
  ),
  'src/api/jobs/quick.ts': `export const kind = 'task'\nexport async function POST() { return 'done' }\n`,
  // Hangs in the instance that the test cuts off, not in the one that takes it over.
  'src/api/jobs/hang.ts': `export const kind = 'task'
export async function POST() {
  if (process.env.SVC_TEST_HANG === '1') await new Promise(() => {})
  return 'taken over'
}
`,
}

const BUNDLES = { lambda: '.output/lambda/index.mjs', vercel: '.vercel/output/functions/__svc.func/index.mjs' } as const
type Target = keyof typeof BUNDLES

let url: string
let root: string
let cleanup: () => Promise<void>
let store: PostgresRunStore
beforeAll(async () => {
  url = await createDatabase('functions')
  ;({ root, cleanup } = await writeApp(APP))
  await buildApp({ root, target: 'lambda' })
  // Each target empties only its own output folder.
  await buildApp({ root, target: 'vercel' })
  store = new PostgresRunStore({ url })
  await store.ready()
}, 60_000)
afterAll(async () => {
  await store?.close()
  await cleanup?.()
})

const started: ChildProcess[] = []
afterEach(() => {
  for (const child of started.splice(0)) child.kill('SIGKILL')
})

interface Instance {
  /** Lambda: invokes the handler with `event` (and a context with `remainingMs` left, when given). */
  invoke(event: unknown, remainingMs?: number): Promise<any>
  /** Vercel: the base URL of the function. */
  base: string
  /** Recycles the instance: SIGKILL, with whatever it was doing. */
  kill(): void
}

/** A fresh instance of the built function of `target`, in a process of its own. */
async function instance(target: Target, env: Record<string, string> = {}): Promise<Instance> {
  const child = spawn(process.execPath, [SCRIPT, target, join(root, BUNDLES[target])], {
    env: { ...process.env, SVC_STORE_URL: url, SVC_TASK_SECRET: TASK_SECRET, CRON_SECRET, ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  })
  started.push(child)
  let stderr = ''
  child.stderr!.on('data', (chunk) => (stderr += chunk))
  const lines = createInterface({ input: child.stdout! })[Symbol.asyncIterator]()
  const next = async () => {
    const { value, done } = await lines.next()
    if (done) throw new Error(`the ${target} instance exited: ${stderr}`)
    return JSON.parse(value)
  }
  const base = target === 'vercel' ? `http://127.0.0.1:${(await next()).port}` : ''
  return {
    base,
    async invoke(event, remainingMs) {
      child.stdin!.write(`${JSON.stringify({ event, remainingMs })}\n`)
      const answer = await next()
      if ('error' in answer) throw new Error(answer.error)
      return answer.result
    },
    kill: () => child.kill('SIGKILL'),
  }
}

/** `POST <path>` of the task admin surface on an instance, with `body` as JSON; resolves to the status and the JSON answer. */
async function post(
  target: Target,
  fn: Instance,
  path: string,
  body: unknown,
  remainingMs?: number,
): Promise<{ status: number; body: any }> {
  const headers = { authorization: `Bearer ${TASK_SECRET}`, 'content-type': 'application/json' }
  if (target === 'vercel') {
    const res = await fetch(`${fn.base}${path}`, { method: 'POST', headers, body: JSON.stringify(body) })
    return { status: res.status, body: await res.json() }
  }
  const result = await fn.invoke(
    {
      version: '2.0',
      rawPath: path,
      headers: { ...headers, host: 'fn.example' },
      body: JSON.stringify(body),
      requestContext: { domainName: 'fn.example', http: { method: 'POST', sourceIp: '203.0.113.9' } },
    },
    remainingMs,
  )
  return { status: result.statusCode, body: JSON.parse(result.body) }
}

/** `POST /__tasks/<name>` on an instance; resolves to the 202 body. */
async function trigger(target: Target, fn: Instance, name: string, remainingMs?: number): Promise<{ id: string }> {
  const answer = await post(target, fn, `/__tasks/${name}`, {}, remainingMs)
  expect(answer.status).toBe(202)
  return answer.body
}

/** The tick, as the platform's one-minute schedule sends it. */
async function tick(target: Target, fn: Instance): Promise<unknown> {
  if (target === 'lambda') return fn.invoke({ svcTick: true })
  const res = await fetch(`${fn.base}/__svc/cron`, { headers: { authorization: `Bearer ${CRON_SECRET}` } })
  expect(res.status).toBe(200)
  return res.json()
}

async function run(id: string): Promise<RunRecord> {
  return (await store.getRun(id))!
}

describe.each(['lambda', 'vercel'] as const)('the %s function on a Postgres store', (target) => {
  it('answers a request once the run it started has ended, or reached its first wait', async () => {
    const fn = await instance(target)
    const quick = await trigger(target, fn, 'jobs.quick')
    expect(await run(quick.id)).toMatchObject({ status: 'completed', result: 'done' })
    const nap = await trigger(target, fn, 'jobs.nap')
    // Held to the sleep, not through it.
    const suspended = await run(nap.id)
    expect(suspended).toMatchObject({ status: 'suspended', steps: { a: { status: 'completed', output: 'a' } } })
    expect(suspended.steps.b).toBeUndefined()
  })

  it('a cron event answers once each fired run has ended or reached its first wait, not through its sleep', async () => {
    const fn = await instance(target)
    let summary: { ok: boolean; runs: Array<{ id: string; taskName: string; status: string }> }
    if (target === 'lambda') summary = await fn.invoke({ svcCron: NIGHTLY[target] })
    else {
      const res = await fetch(`${fn.base}/__svc/cron?cron=${encodeURIComponent(NIGHTLY[target])}`, {
        headers: { authorization: `Bearer ${CRON_SECRET}` },
      })
      expect(res.status).toBe(200)
      summary = await res.json()
    }
    expect(summary).toMatchObject({ ok: true, runs: [{ taskName: `jobs.nightly-${target}`, status: 'suspended' }] })
    expect(await run(summary.runs[0].id)).toMatchObject({ status: 'suspended', steps: { a: { status: 'completed' } } })
  })

  it('a step.sleep(1) started in one invocation is finished by the tick of another instance after its due time', async () => {
    const first = await instance(target)
    const { id } = await trigger(target, first, 'jobs.nap')
    first.kill()
    const suspended = await run(id)
    expect(suspended.status).toBe('suspended')
    const due = Date.parse((suspended.suspended!.waitpoint as { until: string }).until)
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, due - Date.now()) + 50))
    const other = await instance(target)
    expect(await tick(target, other)).toEqual({ ok: true, inFlight: 0 })
    expect(await run(id)).toMatchObject({ status: 'completed', result: 'ab', steps: { nap: { status: 'completed' } } })
  })

  it('a runtime schedule made through one instance starts the run of its tick from the tick of another', async () => {
    const first = await instance(target)
    // Once a year: no tick of its own comes due while the test runs.
    const made = await post(target, first, '/__tasks/jobs.quick/schedules', { cron: '0 0 1 1 *', key: target })
    expect(made).toMatchObject({ status: 201, body: { task: 'jobs.quick', nextAt: expect.any(String) } })
    first.kill()
    // Its tick comes due, as it would by the next minute.
    const due = new Date(Date.now() - 1000).toISOString()
    const db = postgres(url, { onnotice: () => {} })
    try {
      const moved =
        await db`UPDATE svc.timers SET due_at = ${due}, record = jsonb_set(record, '{dueAt}', to_jsonb(${due}::text)) WHERE id = ${`${made.body.id}:schedule`}`
      expect(moved.count).toBe(1)
    } finally {
      await db.end()
    }
    const other = await instance(target)
    expect(await tick(target, other)).toMatchObject({ ok: true })
    const runs = (await store.listRuns({ taskName: 'jobs.quick' })).filter((r) => r.schedule?.id === made.body.id)
    expect(runs).toEqual([expect.objectContaining({ status: 'completed', result: 'done', schedule: { id: made.body.id, tick: due } })])
  })
})

describe('the lambda tick', () => {
  it('fails the invocation, naming SVC_STORE_URL, while the database is down', async () => {
    const fn = await instance('lambda', { SVC_STORE_URL: 'postgres://svc:secret@127.0.0.1:1/svc' })
    await expect(fn.invoke({ svcTick: true })).rejects.toThrow(/SVC_STORE_URL: the Postgres run store cannot start/)
    // The next invocation tries again rather than keeping the first failure.
    await expect(fn.invoke({ svcTick: true })).rejects.toThrow(/SVC_STORE_URL/)
  })

  it('takes over an attempt whose instance died once its lease lapsed', async () => {
    const first = await instance('lambda', { SVC_TEST_HANG: '1' })
    // The invocation stops holding the run 500 ms before its (1.5 s) timeout.
    const { id } = await trigger('lambda', first, 'jobs.hang', 1500)
    expect((await run(id)).status).toBe('running')
    first.kill()
    const other = await instance('lambda')
    // The lease is still live: the attempt is the dead instance's for now.
    expect(await other.invoke({ svcTick: true })).toEqual({ ok: true, inFlight: 0 })
    expect((await run(id)).status).toBe('running')
    // Its lease lapses (leaseMs, 30 s by default, here moved forward).
    const sql = postgres(url, { onnotice: () => {} })
    await sql`UPDATE svc.runs SET lease_expires_at = now() - interval '1 second' WHERE id = ${id}`
    await sql.end()
    expect(await other.invoke({ svcTick: true })).toEqual({ ok: true, inFlight: 0 })
    expect(await run(id)).toMatchObject({ status: 'completed', result: 'taken over' })
  })
})
