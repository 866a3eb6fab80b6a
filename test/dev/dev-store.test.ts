// `svc dev` keeps runs in a SQLite file at .svc/runs.db under the app root
// unless SVC_STORE_URL names another store, so a run outlives a restart.
import { type ChildProcess, spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { eventually, write } from './_helpers.ts'

const cli = fileURLToPath(new URL('../../src/cli/main.ts', import.meta.url))

interface Dev {
  url: string
  out(): string
  stop(): Promise<void>
}

const children: ChildProcess[] = []
afterEach(() => {
  for (const child of children.splice(0)) child.kill('SIGKILL')
})

async function startDev(root: string, storeUrl?: string): Promise<Dev> {
  const env: Record<string, string | undefined> = { ...process.env, NODE_ENV: 'development', NO_COLOR: '1' }
  if (storeUrl === undefined) delete env.SVC_STORE_URL
  else env.SVC_STORE_URL = storeUrl
  const child = spawn(process.execPath, [cli, 'dev', '--root', root, '--port', '0', '--host', '127.0.0.1'], { env })
  children.push(child)
  let out = ''
  child.stdout.on('data', (chunk) => (out += chunk))
  child.stderr.on('data', (chunk) => (out += chunk))
  const exited = new Promise((resolve) => child.once('exit', resolve))
  await eventually(async () => expect(out).toMatch(/Task admin/), 15_000)
  return {
    url: out.match(/svc dev: (\S+)/)![1],
    out: () => out,
    async stop() {
      child.kill('SIGINT')
      await exited
    },
  }
}

describe('svc dev run store', () => {
  let root: string
  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'svc-dev-store-'))
    await write(
      root,
      'src/api/jobs/hello.ts',
      `export const kind = 'task'\nexport async function POST(ctx: any) { return { hello: ctx.input } }\n`,
    )
  })
  afterEach(() => rm(root, { recursive: true, force: true }))

  it('without SVC_STORE_URL, keeps runs in .svc/runs.db under the app root, across a restart', async () => {
    const first = await startDev(root)
    expect(existsSync(join(root, '.svc/runs.db'))).toBe(true)
    expect(first.out()).toContain(`Runs: SQLite ${join(root, '.svc/runs.db')}`)
    const started = await fetch(`${first.url}/__tasks/jobs.hello`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify('dev'),
    })
    expect(started.status).toBe(202)
    const { id: runId } = (await started.json()) as { id: string }
    await eventually(async () => expect((await (await fetch(`${first.url}/__tasks/${runId}`)).json()).status).toBe('completed'))
    await first.stop()

    const second = await startDev(root)
    const run = await (await fetch(`${second.url}/__tasks/${runId}`)).json()
    expect(run).toMatchObject({ status: 'completed', result: { hello: 'dev' } })
    await second.stop()
  })

  it('SVC_STORE_URL=memory keeps runs in memory and makes no file', async () => {
    const dev = await startDev(root, 'memory')
    expect(dev.out()).toContain('Runs: memory')
    // .svc/ holds the generated task types; no run store file is made beside them.
    expect(existsSync(join(root, '.svc', 'runs.db'))).toBe(false)
    await dev.stop()
  })

  it('a malformed SVC_STORE_URL stops svc dev with an error naming the variable', async () => {
    const child = spawn(process.execPath, [cli, 'dev', '--root', root, '--port', '0'], {
      env: { ...process.env, NODE_ENV: 'development', NO_COLOR: '1', SVC_STORE_URL: 'nonsense' },
    })
    children.push(child)
    let err = ''
    child.stderr.on('data', (chunk) => (err += chunk))
    const code = await new Promise((resolve) => child.once('exit', resolve))
    expect(code).toBe(1)
    expect(err).toMatch(/SVC_STORE_URL must be one of/)
  })
})
