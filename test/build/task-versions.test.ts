// A built task carries the version of its code: a digest of its module and
// of every module it imports, as the bundler sees them (docs/deploying.md "Runs across deploys").
import { type ChildProcess, spawn } from 'node:child_process'
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { buildApp } from '../../src/build/build.ts'
import type { TargetName } from '../../src/build/target.ts'
import { until } from '../_helpers.ts'

const REPO = join(import.meta.dirname, '../..')
const dirs: string[] = []
afterAll(() => Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true }))))

/** A fresh directory for an app: under the repository's .tmp/, or under the system's temp dir. */
async function appDir(where: 'repo' | 'system'): Promise<string> {
  const parent = where === 'repo' ? join(REPO, '.tmp') : tmpdir()
  await mkdir(parent, { recursive: true })
  const dir = await mkdtemp(join(parent, 'svc-task-versions-'))
  dirs.push(dir)
  // Another depth too, so that no path from the app to svc's sources is the same.
  return where === 'repo' ? dir : join(dir, 'nested', 'app')
}

const APP: Record<string, string> = {
  'src/lib/money.ts': `export const cents = (amount: number) => Math.round(amount * 100)\n`,
  'src/lib/words.ts': `export const shout = (text: string) => text.toUpperCase()\n`,
  'src/lib/unused.ts': `export const nothing = 0\n`,
  'src/api/jobs/charge.ts': `import { SvcError } from 'svcjs'
import { cents } from '../../lib/money.ts'
export const kind = 'task'
export async function POST(ctx: any) {
  if (ctx.input?.refuse) throw new SvcError('refused', 'REFUSED', 400)
  return { cents: cents(1.5) }
}
`,
  'src/api/jobs/mail.ts': `export const kind = 'task'
export async function POST() {
  const { shout } = await import('../../lib/words.ts')
  return shout('sent')
}
`,
  'src/api/hello.ts': `import { cents } from '../lib/money.ts'\nexport function GET() { return { cents: cents(2) } }\n`,
}

async function writeFiles(root: string, files: Record<string, string>): Promise<void> {
  for (const [file, contents] of Object.entries(files)) {
    await mkdir(dirname(join(root, file)), { recursive: true })
    await writeFile(join(root, file), contents)
  }
}

const BUNDLES: Partial<Record<TargetName, string>> = { node: '.output/node/server.mjs', cloudflare: '.output/cloudflare/index.mjs' }

/**
 * Builds the app at `root` and reads, from the bundle itself, the version
 * each route's entry carries, by file.
 */
async function builtVersions(root: string, target: TargetName = 'node'): Promise<Record<string, string | undefined>> {
  await buildApp({ root, target })
  const code = await readFile(join(root, BUNDLES[target]!), 'utf8')
  const versions: Record<string, string | undefined> = {}
  // Each route's entry is an object literal of its fields, ending with its module.
  for (const [, , file, fields] of code.matchAll(/file:(["'`])(src\/[^"'`]+)\1([^{}]*?)module:/g)) {
    versions[file] = /version:(["'`])([^"'`]*)\1/.exec(fields)?.[2]
  }
  return versions
}

describe('svc build and task versions', () => {
  it('gives each task route a version of 12 hex characters, and no other route one', async () => {
    const root = await appDir('repo')
    await writeFiles(root, APP)
    const versions = await builtVersions(root)
    expect(Object.keys(versions).sort()).toEqual(['src/api/hello.ts', 'src/api/jobs/charge.ts', 'src/api/jobs/mail.ts'])
    expect(versions['src/api/jobs/charge.ts']).toMatch(/^[0-9a-f]{12}$/)
    expect(versions['src/api/jobs/mail.ts']).toMatch(/^[0-9a-f]{12}$/)
    expect(versions['src/api/jobs/charge.ts']).not.toBe(versions['src/api/jobs/mail.ts'])
    expect(versions['src/api/hello.ts']).toBeUndefined()
  })

  it('gives the same app the same versions when built again, and when built in another directory', async () => {
    const here = await appDir('repo')
    const there = await appDir('system')
    await writeFiles(here, APP)
    await writeFiles(there, APP)
    const first = await builtVersions(here)
    expect(await builtVersions(here)).toEqual(first)
    expect(await builtVersions(there)).toEqual(first)
  })

  it('changes the version of the tasks that import a changed helper, and of no other', async () => {
    const root = await appDir('repo')
    await writeFiles(root, APP)
    const before = await builtVersions(root)

    // Imported statically by one task (and by a route that is no task).
    await writeFiles(root, { 'src/lib/money.ts': `export const cents = (amount: number) => Math.round(amount * 100) | 0\n` })
    const money = await builtVersions(root)
    expect(money['src/api/jobs/charge.ts']).not.toBe(before['src/api/jobs/charge.ts'])
    expect(money['src/api/jobs/mail.ts']).toBe(before['src/api/jobs/mail.ts'])

    // Imported dynamically by the other.
    await writeFiles(root, { 'src/lib/words.ts': `export const shout = (text: string) => \`\${text.toUpperCase()}!\`\n` })
    const words = await builtVersions(root)
    expect(words['src/api/jobs/mail.ts']).not.toBe(money['src/api/jobs/mail.ts'])
    expect(words['src/api/jobs/charge.ts']).toBe(money['src/api/jobs/charge.ts'])

    // Imported by nothing.
    await writeFiles(root, { 'src/lib/unused.ts': `export const nothing = 1\n` })
    expect(await builtVersions(root)).toEqual(words)
  })

  it('gives the task routes of a worker build their versions too', async () => {
    const root = await appDir('repo')
    await writeFiles(root, APP)
    const versions = await builtVersions(root, 'cloudflare')
    expect(versions['src/api/jobs/charge.ts']).toMatch(/^[0-9a-f]{12}$/)
    expect(versions['src/api/jobs/mail.ts']).toMatch(/^[0-9a-f]{12}$/)
    expect(versions['src/api/hello.ts']).toBeUndefined()
  })

  it('records the version on each run of a built task', async () => {
    const root = await appDir('repo')
    await writeFiles(root, APP)
    const versions = await builtVersions(root)
    const server = await startServer(join(root, '.output/node/server.mjs'))
    try {
      const headers = { authorization: `Bearer ${SECRET}`, 'content-type': 'application/json' }
      const started = await fetch(`${server.base}/__tasks/jobs.charge`, { method: 'POST', headers, body: '{}' })
      expect(started.status).toBe(202)
      const { id } = (await started.json()) as { id: string }
      const run = await until(async () => {
        const record = (await (await fetch(`${server.base}/__tasks/runs/${id}`, { headers })).json()) as {
          status: string
          version?: string
        }
        return record.status === 'completed' && record
      })
      expect(run.version).toBe(versions['src/api/jobs/charge.ts'])
    } finally {
      await stop(server.child)
    }
  })
})

const SECRET = 'task-versions-secret-0123456789abcdef'

/** Starts a built server.mjs in its own process, on a free port, with its runs in its own directory. */
function startServer(file: string): Promise<{ child: ChildProcess; base: string }> {
  return new Promise((resolve, reject) => {
    // The version of the app, when set, would stand for every task's.
    const { SVC_VERSION: _appVersion, ...env } = process.env
    const child = spawn(process.execPath, [file], {
      cwd: dirname(file),
      env: { ...env, NODE_ENV: 'production', PORT: '0', HOST: '127.0.0.1', SVC_TASK_SECRET: SECRET },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let output = ''
    child.stdout!.on('data', (chunk) => {
      output += chunk
      const match = output.match(/listening on (http:\/\/\S+)/)
      if (match) resolve({ child, base: match[1].replace('0.0.0.0', '127.0.0.1') })
    })
    child.stderr!.on('data', (chunk) => (output += chunk))
    child.on('exit', (code) => reject(new Error(`server exited with ${code}:\n${output}`)))
  })
}

function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return Promise.resolve()
  return new Promise((resolve) => {
    child.once('exit', () => resolve())
    child.kill()
  })
}
