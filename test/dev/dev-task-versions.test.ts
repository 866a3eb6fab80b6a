import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { type DevServer, startDevServer } from '../../src/dev/server.ts'
import { eventually, recordingLogger, write } from './_helpers.ts'

describe('svc dev and task versions', () => {
  let root: string
  let dev: DevServer | undefined

  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'svc-dev-versions-'))
    await write(root, 'src/lib/money.ts', `export const cents = (amount: number) => Math.round(amount * 100)\n`)
    await write(
      root,
      'src/api/jobs/charge.ts',
      `import { cents } from '../../lib/money.ts'\nexport const kind = 'task'\nexport async function POST() { return { cents: cents(1.5) } }\n`,
    )
    await write(root, 'src/api/jobs/mail.ts', `export const kind = 'task'\nexport async function POST() { return 'sent' }\n`)
    await write(root, 'src/api/hello.ts', `export function GET() { return { hello: true } }\n`)
    await write(root, 'src/pages/index.ts', `export default function render() { return 'home' }\n`)
    dev = await start()
  })
  afterEach(async () => {
    await dev?.close()
    dev = undefined
    await rm(root, { recursive: true, force: true })
  })

  const start = () => startDevServer({ root, port: 0, host: '127.0.0.1', logger: recordingLogger(), watch: false })

  /** The version each route the server serves now carries, by file. */
  const versions = () => Object.fromEntries(dev!.app.routes.map((route) => [route.file, route.version]))

  /** Runs `task` to its end and resolves to the version its run recorded. */
  const runVersion = async (task: string): Promise<string | undefined> => {
    const started = await fetch(`${dev!.url}/__tasks/${task}`, { method: 'POST' })
    expect(started.status).toBe(202)
    const { id } = (await started.json()) as { id: string }
    return eventually(async () => {
      const run = (await (await fetch(`${dev!.url}/__tasks/runs/${id}`)).json()) as { status: string; version?: string }
      expect(run.status).toBe('completed')
      return run.version
    })
  }

  it('records on each run the version of its task, which only task routes carry', async () => {
    const served = versions()
    expect(served['src/api/jobs/charge.ts']).toMatch(/^[0-9a-f]{12}$/)
    expect(served['src/api/jobs/mail.ts']).toMatch(/^[0-9a-f]{12}$/)
    expect(served['src/api/hello.ts']).toBeUndefined()
    expect(await runVersion('jobs.charge')).toBe(served['src/api/jobs/charge.ts'])
  })

  it('gives a task a new version when its file changes, and leaves the other tasks theirs', async () => {
    const before = versions()
    await write(
      root,
      'src/api/jobs/charge.ts',
      `import { cents } from '../../lib/money.ts'\nexport const kind = 'task'\nexport async function POST() { return { cents: cents(2.5) } }\n`,
    )
    await dev!.reload(['api/jobs/charge.ts'])
    const after = versions()
    expect(after['src/api/jobs/charge.ts']).toMatch(/^[0-9a-f]{12}$/)
    expect(after['src/api/jobs/charge.ts']).not.toBe(before['src/api/jobs/charge.ts'])
    expect(after['src/api/jobs/mail.ts']).toBe(before['src/api/jobs/mail.ts'])
    expect(await runVersion('jobs.charge')).toBe(after['src/api/jobs/charge.ts'])
  })

  it('gives every task a new version when a helper changes, since any of them may import it', async () => {
    const before = versions()
    await write(root, 'src/lib/money.ts', `export const cents = (amount: number) => Math.round(amount * 100) | 0\n`)
    await dev!.reload(['lib/money.ts'])
    const after = versions()
    expect(after['src/api/jobs/charge.ts']).not.toBe(before['src/api/jobs/charge.ts'])
    expect(after['src/api/jobs/mail.ts']).not.toBe(before['src/api/jobs/mail.ts'])
  })

  it('keeps the versions of the tasks when a route that is no task, or a page, changes', async () => {
    const before = versions()
    await write(root, 'src/api/hello.ts', `export function GET() { return { hello: 'again' } }\n`)
    await write(root, 'src/pages/index.ts', `export default function render() { return 'home, again' }\n`)
    await dev!.reload(['api/hello.ts', 'pages/index.ts'])
    expect(versions()).toEqual(before)
  })

  it('serves the same versions after a restart over unchanged code', async () => {
    const before = versions()
    await dev!.close()
    dev = await start()
    expect(versions()).toEqual(before)
  })
})
