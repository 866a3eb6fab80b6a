/**
 * A task file without `kind: 'task'`, as a new user writes it, through every
 * command that reads an app: `svc routes inspect` and `svc build` (real child
 * processes) fail with the error at `file:line:col`, and `svc dev` reports it
 * and does not serve the file.
 */
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { startDevServer, type DevServer } from '../../src/dev/server.ts'
import { recordingLogger } from '../dev/_helpers.ts'
import { writeApp } from '../targets/_app.ts'
import { svc } from './_svc.ts'

const FORGOT = `import { defineTask } from 'svcjs'\n\nexport const POST = defineTask({ handler: async () => 1 })\n`
const FORGOT_ERROR =
  "src/api/jobs/forgot.ts:3:21: POST is a defineTask() handler, but this file declares no kind, so it is a serverless route: POST /api/jobs/forgot would run the task for any caller, without the task secret; add `export const route = { kind: 'task' }`"
const SCHEDULED = `export const schedule = '0 3 * * *'\nexport async function POST() { return 1 }\n`
const SCHEDULED_ERROR =
  "src/api/jobs/cleanup.ts:1:25: schedule applies to tasks only, but this file declares no kind, so it is a serverless route; add `export const route = { kind: 'task' }` if it is a task, or remove schedule"
const HELLO = `export function GET() { return { hello: true } }\n`

const apps: { cleanup: () => Promise<void> }[] = []
let dev: DevServer | undefined
afterEach(async () => {
  await dev?.close()
  dev = undefined
  for (const app of apps.splice(0)) await app.cleanup()
})

async function app(files: Record<string, string>): Promise<string> {
  const written = await writeApp(files)
  apps.push(written)
  return written.root
}

describe('a task file without kind: task', () => {
  it('svc routes inspect prints the error at file:line:col, naming the fix, and exits 1', async () => {
    const root = await app({ 'src/api/jobs/forgot.ts': FORGOT, 'src/api/jobs/cleanup.ts': SCHEDULED, 'src/api/hello.ts': HELLO })
    for (const args of [[], ['--json']]) {
      const { code, stdout, stderr } = await svc(['routes', 'inspect', ...args, '--root', root])
      expect(code).toBe(1)
      expect(stdout).toBe('')
      expect(stderr.trim().split('\n')).toEqual([SCHEDULED_ERROR, FORGOT_ERROR, '2 config errors'])
    }
  })

  it('svc build fails with it and writes no bundle', async () => {
    const root = await app({ 'src/api/jobs/forgot.ts': FORGOT, 'src/api/hello.ts': HELLO })
    const { code, stdout, stderr } = await svc(['build', '--root', root])
    expect(code).toBe(1)
    expect(stdout).toBe('')
    expect(stderr).toContain(FORGOT_ERROR)
    expect(existsSync(join(root, '.output'))).toBe(false)
  })

  it('svc dev reports it and leaves the file unserved, while the rest of the app serves', async () => {
    const root = await app({ 'src/api/jobs/forgot.ts': FORGOT, 'src/api/jobs/cleanup.ts': SCHEDULED, 'src/api/hello.ts': HELLO })
    const logger = recordingLogger()
    dev = await startDevServer({ root, port: 0, host: '127.0.0.1', logger, watch: false })
    expect(dev.errors.map(String)).toEqual([SCHEDULED_ERROR, FORGOT_ERROR])
    expect(logger.lines.map(({ text }) => text)).toEqual(expect.arrayContaining([SCHEDULED_ERROR, FORGOT_ERROR]))
    for (const path of ['/api/jobs/forgot', '/api/jobs/cleanup']) {
      expect((await fetch(`${dev.url}${path}`, { method: 'POST' })).status).toBe(404)
    }
    expect(await (await fetch(`${dev.url}/api/hello`)).json()).toEqual({ hello: true })
  })

  it('with route = { kind: task } the same file is a task in every command', async () => {
    const root = await app({ 'src/api/jobs/forgot.ts': `export const route = { kind: 'task' }\n${FORGOT}` })
    const inspect = await svc(['routes', 'inspect', '--json', '--root', root])
    expect(inspect.code).toBe(0)
    expect(JSON.parse(inspect.stdout).routes).toMatchObject([{ path: '/api/jobs/forgot', kind: 'task', name: 'jobs.forgot' }])
    const run = await svc(['tasks', 'run', 'jobs.forgot', '--json', '--root', root])
    expect(run.code).toBe(0)
    expect(JSON.parse(run.stdout)).toMatchObject({ ok: true, result: 1 })
    const build = await svc(['build', '--root', root])
    expect(build.code).toBe(0)
    expect(existsSync(join(root, '.output'))).toBe(true)
  })
})
