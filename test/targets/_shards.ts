/**
 * The app, the side-effect server and the worker handle of the shard tests
 * (cloudflare-shards.test.ts) and of the shard benchmark's app: tasks that
 * report when each attempt begins and ends to a real HTTP server, so a
 * limit that did not hold shows as attempts open at once.
 */
import { createServer, type Server } from 'node:http'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { buildApp } from '../../src/build/build.ts'
import { writeApp } from './_app.ts'
import { startBuiltWorker } from './_wrangler.ts'

export const SECRET = 'shards-secret-0123456789abcdef0123456'

const NOTIFY = `export async function notify(url: string, what: string, body: unknown): Promise<void> {
  const res = await fetch(\`\${url}/\${what}\`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
  await res.text()
}
`

/** Task files of the shard app, by path from the app root. */
export const SHARD_APP: Record<string, string> = {
  'src/api/_notify.ts': NOTIFY,
  // Placed on no shard in particular: runs spread.
  'src/api/jobs/plain.ts': `export const kind = 'task'
export async function POST(ctx: { input: { n?: number } }) {
  return { n: ctx.input?.n ?? null }
}
`,
  // At most two at once, all of the task's runs on the shard of its name.
  'src/api/jobs/limited.ts': `import { notify } from '../_notify.ts'
export const route = { kind: 'task', concurrency: 2 } as const
export async function POST(ctx: { input: { notify: string }; runId: string }) {
  await notify(ctx.input.notify, 'limited-start', { runId: ctx.runId })
  await new Promise((resolve) => setTimeout(resolve, 30))
  await notify(ctx.input.notify, 'limited-end', { runId: ctx.runId })
  return 'done'
}
`,
  // One at a time per user: each user's runs on the shard of that user.
  'src/api/jobs/per-user.ts': `import { notify } from '../_notify.ts'
export const route = { kind: 'task', concurrency: { limit: 1, key: 'input.user' } } as const
export async function POST(ctx: { input: { notify: string; user: string }; runId: string }) {
  await notify(ctx.input.notify, 'user-start', { runId: ctx.runId, user: ctx.input.user })
  await new Promise((resolve) => setTimeout(resolve, 20))
  await notify(ctx.input.notify, 'user-end', { runId: ctx.runId, user: ctx.input.user })
  return ctx.input.user
}
`,
  'src/api/jobs/digest.ts': `export const route = { kind: 'task', debounce: { seconds: 1, key: 'input.user' } } as const
export async function POST(ctx: { input: { user: string; n: number } }) {
  return ctx.input
}
`,
  'src/api/jobs/nightly.ts': `export const kind = 'task'
export const schedule = '0 4 * * *'
export async function POST() {
  return 'night'
}
`,
  'src/api/jobs/hourly.ts': `export const kind = 'task'
export const schedule = '0 * * * *'
export async function POST() {
  return 'hour'
}
`,
  'src/api/jobs/receipt.ts': `export const route = { kind: 'task', on: 'order.paid' } as const
export async function POST(ctx: { input: unknown }) {
  return ctx.input
}
`,
  'src/api/jobs/fulfil.ts': `export const kind = 'task'
export async function POST(ctx: { input: { orderId: string }; step: any }) {
  const { event } = await ctx.step.waitForEvent('paid', 'order.paid', { match: { orderId: ctx.input.orderId }, lookbackSeconds: 60 })
  return event.data
}
`,
  'src/api/jobs/sleepy.ts': `import { notify } from '../_notify.ts'
export const kind = 'task'
export async function POST(ctx: { input: { seconds: number; notify?: string }; runId: string; step: any }) {
  // A recorded step before the sleep: a replay after a restart must not run it again.
  await ctx.step.run('before', () => (ctx.input.notify ? notify(ctx.input.notify, 'sleepy-before', { runId: ctx.runId }) : null))
  await ctx.step.sleep('nap', ctx.input.seconds)
  await ctx.step.run('after', () => (ctx.input.notify ? notify(ctx.input.notify, 'sleepy-after', { runId: ctx.runId }) : null))
  return 'rested'
}
`,
  // Placed anywhere; its child goes to the shard of the child's task (jobs.limited, or jobs.resting with a sleep).
  'src/api/jobs/parent.ts': `import { notify } from '../_notify.ts'
export const kind = 'task'
export async function POST(ctx: { input: { notify: string; sleep?: number; task?: string }; runId: string; step: any }) {
  const child = ctx.input.sleep
    ? await ctx.step.waitForTask('child', ctx.input.task ?? 'jobs.resting', { seconds: ctx.input.sleep, notify: ctx.input.notify })
    : await ctx.step.waitForTask('child', 'jobs.limited', { notify: ctx.input.notify })
  await ctx.step.run('after', () => notify(ctx.input.notify, 'parent-after', { runId: ctx.runId }))
  return child
}
`,
  'src/api/jobs/resting.ts': `import { notify } from '../_notify.ts'
export const route = { kind: 'task', concurrency: 16 } as const
export async function POST(ctx: { input: { seconds: number; notify: string }; runId: string; step: any }) {
  // Recorded before the sleep: a replay after a restart must not run it again.
  await ctx.step.run('before', () => notify(ctx.input.notify, 'child-before', { runId: ctx.runId }))
  await ctx.step.sleep('nap', ctx.input.seconds)
  return 'woke'
}
`,
  // jobs.resting again, in another object (its name hashes to another shard).
  'src/api/jobs/dozing.ts': `import { notify } from '../_notify.ts'
export const route = { kind: 'task', concurrency: 16 } as const
export async function POST(ctx: { input: { seconds: number; notify: string }; runId: string; step: any }) {
  // Recorded before the sleep: a replay after a restart must not run it again.
  await ctx.step.run('before', () => notify(ctx.input.notify, 'child-before', { runId: ctx.runId }))
  await ctx.step.sleep('nap', ctx.input.seconds)
  return 'woke'
}
`,
  'src/api/jobs/approval.ts': `export const kind = 'task'
export async function POST(ctx: { step: any }) {
  const answer = await ctx.step.waitForToken('approve')
  return { approved: answer.payload }
}
`,
}

/** The shard app in a temp dir, with `shards` in its package.json. */
export async function shardApp(shards: number): Promise<{ root: string; cleanup: () => Promise<void> }> {
  return writeApp({ ...SHARD_APP, 'package.json': packageJson(shards) })
}

/** Sets `shards` in the app's package.json and builds it for cloudflare; resolves to the output directory. */
export async function buildWithShards(root: string, shards: number): Promise<string> {
  await writeFile(join(root, 'package.json'), packageJson(shards))
  await buildApp({ root, target: 'cloudflare' })
  return join(root, '.output/cloudflare')
}

function packageJson(shards: number): string {
  return `${JSON.stringify({ name: 'shard-app', type: 'module', svc: { cloudflare: { shards } } }, null, 2)}\n`
}

export interface Hit {
  what: string
  body: any
}

/** The HTTP server the tasks tell of each attempt's start and end. */
export async function notifyServer(): Promise<{ url: string; hits: Hit[]; close: () => Promise<void> }> {
  const hits: Hit[] = []
  const server: Server = createServer((req, res) => {
    let text = ''
    req.on('data', (chunk) => (text += chunk))
    req.on('end', () => {
      hits.push({ what: (req.url ?? '/').slice(1), body: text ? JSON.parse(text) : {} })
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}')
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as { port: number }
  return {
    url: `http://127.0.0.1:${port}`,
    hits,
    close: () => {
      server.closeAllConnections()
      return new Promise((resolve) => server.close(() => resolve()))
    },
  }
}

/** The most attempts open at once among `hits`, counted from `start` and `end` hits, per `group` of each hit. */
export function mostAtOnce(hits: readonly Hit[], start: string, end: string, group: (hit: Hit) => string = () => ''): number {
  const open = new Map<string, number>()
  let most = 0
  for (const hit of hits) {
    const key = group(hit)
    if (hit.what === start) {
      open.set(key, (open.get(key) ?? 0) + 1)
      most = Math.max(most, open.get(key)!)
    }
    if (hit.what === end) open.set(key, (open.get(key) ?? 0) - 1)
  }
  return most
}

/** A built worker in workerd, with its Durable Objects kept in `persist`, and the calls the tests make to it. */
export async function shardWorker(out: string, persist: string) {
  const mf = await startBuiltWorker(out, { SVC_TASK_SECRET: SECRET }, persist)
  const admin = async (path: string, init: { method?: string; body?: unknown; headers?: Record<string, string> } = {}) => {
    const res = await mf.dispatchFetch(`http://worker${path}`, {
      method: init.method ?? (init.body === undefined ? 'GET' : 'POST'),
      headers: { authorization: `Bearer ${SECRET}`, 'content-type': 'application/json', ...init.headers },
      body: init.body === undefined ? undefined : JSON.stringify(init.body),
    })
    return { status: res.status, body: (await res.json()) as any }
  }
  const run = async (id: string) => (await admin(`/__tasks/${encodeURIComponent(id)}`)).body
  /** Polls run `id` until `done` holds of it. */
  const until = async (id: string, done: (run: any) => boolean, timeoutMs = 15_000) => {
    const deadline = Date.now() + timeoutMs
    for (;;) {
      const current = await run(id)
      if (done(current)) return current
      if (Date.now() > deadline) throw new Error(`run ${id} is ${current.status ?? JSON.stringify(current)} after ${timeoutMs} ms`)
      await new Promise((resolve) => setTimeout(resolve, 25))
    }
  }
  /** Which tasks objects hold run `id`, asked of each one directly, past the worker. */
  /** The shards whose object holds run `id` (or, with `schedule`, runtime schedule `id`). */
  const shardsHolding = async (id: string, shards: number, what: 'run' | 'schedule' = 'run') => {
    const ns = (await mf.getDurableObjectNamespace('SVC_TASKS')) as unknown as {
      idFromName(name: string): unknown
      get(id: unknown): { fetch(url: string, init: RequestInit): Promise<Response> }
    }
    const held: number[] = []
    for (let shard = 0; shard < shards; shard++) {
      const stub = ns.get(ns.idFromName(shard === 0 ? 'svc-tasks' : `svc-tasks-${shard}`))
      const res = await stub.fetch('https://svc-tasks.internal/', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(
          what === 'run' ? { method: 'getRun', args: [id], shards } : { method: 'schedules', args: ['get', id], shards },
        ),
      })
      const answer = (await res.json()) as { value?: unknown }
      if (answer.value) held.push(shard)
    }
    return held
  }
  const scheduled = async (cron: string) => {
    const worker = (await mf.getWorker()) as unknown as { scheduled(options: { cron: string }): Promise<{ outcome: string }> }
    return worker.scheduled({ cron })
  }
  return { mf, admin, run, until, shardsHolding, scheduled }
}

export type ShardWorker = Awaited<ReturnType<typeof shardWorker>>
