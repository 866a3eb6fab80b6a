import { spawn, spawnSync } from 'node:child_process'
import { copyFile, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { delimiter, join, sep } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

const repo = fileURLToPath(new URL('../..', import.meta.url))

// The README's commands, typed as a user types them in a checkout after
// `npm install`: `npx svc …` from the shell, where `node` is whatever the
// system has and nothing has built dist/. The npm cache is a new, empty one,
// as on a machine that never ran npx here, so npx links the bin afresh.
describe('the svc command in a checkout', () => {
  let cache: string
  beforeAll(async () => {
    cache = await mkdtemp(join(tmpdir(), 'svc-npm-cache-'))
  })
  afterAll(() => rm(cache, { recursive: true, force: true }))

  /** `npx svc <args>` in the repository, with the user's PATH (without the node_modules/.bin vitest runs under). */
  function npxSvc(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
    const PATH = (process.env.PATH ?? '')
      .split(delimiter)
      .filter((dir) => !dir.endsWith(`node_modules${sep}.bin`))
      .join(delimiter)
    const env: NodeJS.ProcessEnv = { ...process.env, PATH, NO_COLOR: '1', npm_config_cache: cache, npm_config_offline: 'true' }
    // The variables an npm script would have set: a user's shell has none of them.
    for (const name of Object.keys(env)) if (/^npm_(?!config_cache$|config_offline$)/i.test(name)) delete env[name]
    return new Promise((resolve, reject) => {
      const child = spawn('npx', ['svc', ...args], { cwd: repo, env })
      let stdout = ''
      let stderr = ''
      child.stdout.on('data', (chunk) => (stdout += chunk))
      child.stderr.on('data', (chunk) => (stderr += chunk))
      child.on('error', reject)
      child.on('close', (code) => resolve({ code, stdout, stderr }))
    })
  }

  it('npx svc routes inspect --root playground prints the route table', async () => {
    const { code, stdout, stderr } = await npxSvc(['routes', 'inspect', '--root', 'playground'])
    expect(stderr).not.toContain('not found')
    expect(code).toBe(0)
    expect(stdout.split('\n')[0]).toMatch(/^PATH\s+KIND\s+NAME\s+METHODS/)
    expect(stdout).toMatch(/\/api\/jobs\/onboard\s+task\s+jobs\.onboard\s+POST/)
    expect(stdout).toMatch(/\/api\/chat\s+hot\s+-\s+GET,WS/)
  })

  it('npx svc tasks run runs a playground task to its end', async () => {
    const { code, stdout } = await npxSvc([
      'tasks',
      'run',
      'jobs.onboard',
      '--input',
      '{"email":"ada@example.com"}',
      '--root',
      'playground',
      '--json',
    ])
    expect(code).toBe(0)
    expect(JSON.parse(stdout)).toMatchObject({
      ok: true,
      taskName: 'jobs.onboard',
      result: { emailed: true, account: { email: 'ada@example.com' } },
    })
  })
})

// The bin as the published package has it (dist/, no sources), and as a
// checkout has it on a Node that cannot run TypeScript.
describe('the svc bin', () => {
  let dir: string
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'svc-bin-'))
    await mkdir(join(dir, 'bin'))
    await copyFile(join(repo, 'bin/svc.mjs'), join(dir, 'bin/svc.mjs'))
  })
  afterAll(() => rm(dir, { recursive: true, force: true }))

  const run = (...nodeFlags: string[]) =>
    spawnSync(process.execPath, [...nodeFlags, join(dir, 'bin/svc.mjs'), 'routes', 'inspect'], { encoding: 'utf8' })

  it('runs the sources when they are there and Node strips types, else dist, else says what to do', async () => {
    await mkdir(join(dir, 'src/cli'), { recursive: true })
    await writeFile(join(dir, 'src/cli/main.ts'), `const args: string[] = process.argv.slice(2)\nconsole.log('source', args.join(' '))\n`)
    expect(run().stdout).toBe('source routes inspect\n')

    const old = run('--no-experimental-strip-types')
    expect(old.status).toBe(1)
    expect(old.stderr).toContain('needs Node 22.18 or later')
    expect(old.stderr).toContain(
      'Run `npm install` in the repository (it installs Node 24 for npm scripts and npx), then `npx svc <command>`',
    )

    await mkdir(join(dir, 'dist'))
    await writeFile(join(dir, 'dist/cli.mjs'), `console.log('dist', process.argv.slice(2).join(' '))\n`)
    expect(run('--no-experimental-strip-types').stdout).toBe('dist routes inspect\n')
    await rm(join(dir, 'src'), { recursive: true })
    expect(run().stdout).toBe('dist routes inspect\n')
  })
})
