// What `svc dev` prints as it starts: each task with what starts its runs,
// and whether the admin surface needs the secret, which the surface then
// does or does not ask for.
import { type ChildProcess, spawn } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest'
import { until } from '../_helpers.ts'
import { write } from '../dev/_helpers.ts'

const cli = fileURLToPath(new URL('../../src/cli/main.ts', import.meta.url))
const SECRET = 'dev-banner-secret-0123456789abcdef0123'

let root: string
const children: ChildProcess[] = []

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'svc-dev-banner-'))
  await write(root, 'src/api/hello.ts', 'export function GET() { return { hello: true } }\n')
  await write(
    root,
    'src/api/jobs/report.ts',
    "export const route = { kind: 'task', schedule: '0 6 * * *', timezone: 'Europe/Paris' } as const\nexport async function POST() { return 1 }\n",
  )
  await write(
    root,
    'src/api/jobs/receipt.ts',
    "export const route = { kind: 'task', on: ['order.paid', 'order.refunded'] } as const\nexport async function POST() { return 1 }\n",
  )
  await write(root, 'src/api/jobs/manual.ts', "export const route = { kind: 'task' } as const\nexport async function POST() { return 1 }\n")
})
afterEach(() => {
  for (const child of children.splice(0)) child.kill('SIGKILL')
})
afterAll(() => rm(root, { recursive: true, force: true }))

async function banner(env: Record<string, string | undefined>): Promise<{ text: string; url: string }> {
  const child = spawn(process.execPath, [cli, 'dev', '--root', root, '--port', '0', '--host', '127.0.0.1'], {
    env: { ...process.env, NODE_ENV: 'development', SVC_TASK_SECRET: undefined, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  children.push(child)
  let out = ''
  child.stdout!.on('data', (chunk) => (out += chunk))
  child.stderr!.on('data', (chunk) => (out += chunk))
  await until(() => out.includes('Dashboard:') || (child.exitCode !== null && Promise.reject(new Error(out))), 20_000)
  return { text: out, url: /svc dev: (http:\/\/\S+)/.exec(out)![1] }
}

const row = (text: string, task: string) => text.split('\n').find((line) => line.includes(`/__tasks/${task}`))

it('lists what starts each task, and says the admin surface is open to this machine without a secret', async () => {
  const { text, url } = await banner({})
  expect(row(text, 'jobs.report')).toMatch(/task\s+POST\s+cron 0 6 \* \* \* \(Europe\/Paris\)/)
  expect(row(text, 'jobs.receipt')).toMatch(/task\s+POST\s+on order\.paid, order\.refunded/)
  expect(row(text, 'jobs.manual')).toMatch(/task\s+POST\s+on demand/)
  expect(text).toMatch(/Task admin: \S+\/__tasks \(open to requests from this machine: no SVC_TASK_SECRET is set\)/)
  expect((await fetch(`${url}/__tasks`)).status).toBe(200)
})

it('says the admin surface needs the secret when one is set, and it does', async () => {
  const { text, url } = await banner({ SVC_TASK_SECRET: SECRET })
  expect(text).toMatch(/Task admin: \S+\/__tasks \(needs the task secret: send Authorization: Bearer \$SVC_TASK_SECRET\)/)
  expect((await fetch(`${url}/__tasks`)).status).toBe(401)
  expect((await fetch(`${url}/__tasks`, { headers: { authorization: `Bearer ${SECRET}` } })).status).toBe(200)
})
