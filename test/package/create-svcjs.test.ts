// `npm create svcjs@latest my-app` as a user runs it: create-svcjs and svc
// packed with `npm pack`, create-svcjs run from its tarball by `npm exec` (what
// `npm create` does) in a directory outside the repository, the new app
// installed from the tarballs, then every script the app's README names, on
// Node 24. Packing svc builds dist/, so the file takes about a minute.
import { existsSync, readFileSync } from 'node:fs'
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { eventually, pack, PKG, REPO, run, runOk, type Server, serve, userEnv } from './_packed.ts'

const CREATE_SVC = join(REPO, 'packages/create-svcjs')
const INSTALL = ['install', '--prefer-offline', '--no-audit', '--no-fund']

let dir: string
let svc: { tarball: string }
let createSvc: { tarball: string; files: string[] }
/** One app per template, created and installed side by side, as npm spends most of an install waiting. */
let apps: { basic: string; durable: string; cloudflare: string }
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'create-svcjs-'))
  svc = inject('svcPack')
  createSvc = await pack(dir, CREATE_SVC)
  const [basic, durable, cloudflare] = await Promise.all([
    createAndInstall('my-app', 'basic'),
    createAndInstall('durable-app', 'durable'),
    // wrangler (a dev dependency) brings workerd, hundreds of megabytes; the build needs svc alone.
    createAndInstall('cf-app', 'cloudflare', ['--omit=dev']),
  ])
  apps = { basic, durable, cloudflare }
}, 600_000)
afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true })
})

/**
 * `create-svcjs <args>` from the packed tarball, in `cwd`, as `npm create svcjs`
 * runs it. npm exec keeps the package it installs under its cache's `_npx/`;
 * a cache in the temp directory goes with it (create-svcjs has no dependencies
 * to fetch).
 */
const create = (args: string[], cwd = dir) =>
  run('npm', ['exec', '--yes', '--cache', join(dir, 'npm-cache'), `--package=${createSvc.tarball}`, '--', 'create-svcjs', ...args], { cwd })

/** Creates an app from `template` against the packed svc and installs it. */
async function createAndInstall(name: string, template: string, installArgs: string[] = []): Promise<string> {
  const created = await create([name, '--template', template, '--svc-version', svc.tarball])
  if (created.code !== 0) throw new Error(`create-svcjs exited with ${created.code}:\n${created.stdout}\n${created.stderr}`)
  const app = join(dir, name)
  await runOk('npm', [...INSTALL, ...installArgs], { cwd: app, boundMs: 300_000 })
  return app
}

const readJson = (file: string) => JSON.parse(readFileSync(file, 'utf8'))

describe('the create-svcjs package', () => {
  it('holds its bin, sources and templates, at the version of svc it is released with', () => {
    const tops = new Set(createSvc.files.map((file) => file.split('/')[0]))
    expect([...tops].sort()).toEqual(['LICENSE', 'README.md', 'bin', 'package.json', 'src', 'templates'])
    expect(createSvc.files).toContain('templates/base/_gitignore')
    const pkg = readJson(join(CREATE_SVC, 'package.json'))
    expect(pkg.version).toBe(PKG.version)
    expect(pkg.engines).toEqual(PKG.engines)
    expect(pkg.bin).toEqual({ 'create-svcjs': './bin/create-svcjs.mjs' })
    expect(pkg.dependencies ?? {}).toEqual({})
  })

  it('--help prints the usage and every template', async () => {
    const { code, stdout } = await create(['--help'])
    expect(code).toBe(0)
    expect(stdout).toContain(`create-svcjs v${PKG.version}`)
    for (const template of ['basic', 'durable', 'cloudflare']) expect(stdout).toMatch(new RegExp(`^  ${template}\\s+\\S`, 'm'))
  })

  it('refuses an unknown template or option, saying which', async () => {
    const template = await create(['nope', '--template', 'nope'])
    expect(template.stderr).toContain('Unknown template "nope": choose one of basic, durable, cloudflare')
    expect(template.code).toBe(1)
    const option = await create(['nope', '--templat', 'basic'])
    expect(option.stderr).toContain('Unknown option --templat')
    expect(option.code).toBe(1)
    expect(existsSync(join(dir, 'nope'))).toBe(false)
  })

  it('refuses a directory that is not empty, and writes over it with --force', async () => {
    const taken = join(dir, 'taken')
    await mkdir(taken)
    await writeFile(join(taken, 'notes.txt'), 'mine\n')
    const refused = await create(['taken'])
    expect(refused.stderr).toContain('taken is not empty (1 entry)')
    expect(refused.stderr).toContain('--force')
    expect(refused.code).toBe(1)
    expect(existsSync(join(taken, 'package.json'))).toBe(false)

    const forced = await create(['taken', '--force'])
    expect(forced.code).toBe(0)
    expect(readJson(join(taken, 'package.json')).name).toBe('taken')
    expect(readFileSync(join(taken, 'notes.txt'), 'utf8')).toBe('mine\n')
  })

  it('depends on svc at its own version unless --svc-version says otherwise', async () => {
    const { code, stdout } = await create(['defaults'])
    expect(code).toBe(0)
    expect(stdout).toContain('Created defaults from the basic template.')
    expect(stdout).toMatch(/cd defaults\n {2}npm install\n {2}npm run dev/)
    expect(readJson(join(dir, 'defaults/package.json')).dependencies).toEqual({ svcjs: `^${PKG.version}` })
  })
})

describe('the basic template, installed from the tarballs', () => {
  let app: string
  beforeAll(() => {
    app = apps.basic
  })

  it('writes the app, its tests, a tsconfig that includes the generated types, and a .gitignore', () => {
    for (const file of ['src/api/hello.ts', 'src/api/jobs/report.ts', 'test/hello.test.ts', 'test/report.test.ts', 'README.md']) {
      expect(existsSync(join(app, file)), file).toBe(true)
    }
    expect(readJson(join(app, 'tsconfig.json')).include).toEqual(['.svc/types.d.ts', 'src', 'test'])
    expect(readFileSync(join(app, '.gitignore'), 'utf8').split('\n').filter(Boolean)).toEqual([
      'node_modules/',
      '.svc/',
      '.output/',
      'dist/',
      '.vercel/',
      '.wrangler/',
    ])
    const pkg = readJson(join(app, 'package.json'))
    expect(pkg).toMatchObject({ name: 'my-app', private: true, type: 'module', dependencies: { svcjs: `file:${svc.tarball}` } })
    expect(Object.keys(pkg.scripts)).toEqual(['dev', 'build', 'start', 'typecheck', 'test'])
    expect(Object.keys(pkg.devDependencies).sort()).toEqual(['@types/node', 'typescript'])
  })

  describe('npm run dev', () => {
    let dev: Server
    beforeAll(async () => {
      dev = await serve('npm', ['run', 'dev', '--', '--port', '0'], { cwd: app, env: userEnv(), ready: /svc dev: (http:\/\/\S+)/ })
    }, 90_000)
    afterAll(() => dev?.stop())

    it('serves the route', async () => {
      const res = await fetch(`${dev.url}/api/hello?name=Ada`)
      expect(res.status).toBe(200)
      expect(await res.json()).toEqual({ hello: 'Ada' })
    })

    it('runs the task through its steps when started over the admin surface', async () => {
      const started = await fetch(`${dev.url}/__tasks/jobs.report`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{}',
      })
      expect(started.status).toBe(202)
      const { id } = (await started.json()) as { id: string }
      const finished = await eventually(async () => {
        const body = (await (await fetch(`${dev.url}/__tasks/${id}`)).json()) as { status: string }
        return body.status === 'completed' ? body : undefined
      })
      expect(finished).toMatchObject({ result: { signups: 3, summary: '3 new sign-ups' } })
    })

    it('serves the dashboard', async () => {
      const res = await fetch(`${dev.url}/__svc/dashboard`)
      expect(res.status).toBe(200)
      expect(await res.text()).toContain('<title>svc runs</title>')
    })
  })

  it('npm run build writes the node server, and npm start serves it', async () => {
    await runOk('npm', ['run', 'build'], { cwd: app })
    expect(existsSync(join(app, '.output/node/server.mjs'))).toBe(true)
    const server = await serve('npm', ['start'], { cwd: app, env: { ...userEnv(), PORT: '0' }, ready: /listening on (http:\/\/\S+)/ })
    try {
      const res = await fetch(`${server.url.replace('0.0.0.0', '127.0.0.1')}/api/hello`)
      expect(await res.json()).toEqual({ hello: 'world' })
    } finally {
      await server.stop()
    }
  }, 60_000)

  it('npm run typecheck writes the task types and passes', async () => {
    const { stdout } = await runOk('npm', ['run', 'typecheck'], { cwd: app })
    expect(stdout).toContain('.svc/types.d.ts (1 task)')
    expect(readFileSync(join(app, '.svc/types.d.ts'), 'utf8')).toContain('"jobs.report": {')
  }, 60_000)

  it('npm test passes: the route and the task, tested in-process by node --test', async () => {
    const { stdout } = await runOk('npm', ['test'], { cwd: app })
    expect(stdout).toMatch(/^ℹ pass 5$/m)
    expect(stdout).toMatch(/^ℹ fail 0$/m)
  }, 60_000)
})

describe('the durable template, installed from the tarballs', () => {
  let app: string
  beforeAll(() => {
    app = apps.durable
  })

  it('adds a task that sleeps, and a README that explains SVC_STORE_URL', () => {
    expect(readFileSync(join(app, 'src/api/jobs/onboard.ts'), 'utf8')).toContain("ctx.step.sleep('wait-a-day'")
    expect(readFileSync(join(app, 'README.md'), 'utf8')).toContain('`SVC_STORE_URL` says where runs are kept')
    expect(readJson(join(app, 'package.json')).dependencies).toHaveProperty('valibot')
  })

  it('npm run typecheck and npm test pass: a day-long sleep and a retry, tested with svcjs/testing in milliseconds', async () => {
    await runOk('npm', ['run', 'typecheck'], { cwd: app })
    const { stdout } = await runOk('npm', ['test'], { cwd: app })
    expect(stdout).toMatch(/^✔ onboarding welcomes the user, sleeps for a day, then sends tips \([\d.]+ms\)$/m)
    expect(stdout).toMatch(/^✔ a welcome email that fails is sent again after the backoff \([\d.]+ms\)$/m)
    expect(stdout).toMatch(/^ℹ fail 0$/m)
  }, 60_000)
})

describe('the cloudflare template, installed without its dev dependencies', () => {
  let app: string
  beforeAll(() => {
    app = apps.cloudflare
  })

  it('builds a worker with a wrangler.json, and runs wrangler to preview and deploy it', async () => {
    const pkg = readJson(join(app, 'package.json'))
    expect(pkg.scripts).toMatchObject({
      build: 'svc build --target cloudflare',
      preview: 'wrangler dev --config .output/cloudflare/wrangler.json',
      deploy: 'wrangler deploy --config .output/cloudflare/wrangler.json',
    })
    expect(pkg.scripts).not.toHaveProperty('start')
    expect(pkg.devDependencies).toHaveProperty('wrangler')
    const readme = readFileSync(join(app, 'README.md'), 'utf8')
    expect(readme).toContain('npx wrangler secret put SVC_TASK_SECRET')
    // How to fire a schedule under wrangler dev, with the template's own expression.
    expect(readme).toContain('curl "http://localhost:8787/cdn-cgi/local/scheduled?cron=0+6+*+*+*"')

    await runOk('npm', ['run', 'build'], { cwd: app })
    const wrangler = readJson(join(app, '.output/cloudflare/wrangler.json'))
    expect(wrangler).toMatchObject({ name: 'cf-app', main: 'index.mjs', triggers: { crons: ['0 6 * * *'] } })
    expect(existsSync(join(app, '.output/cloudflare/index.mjs'))).toBe(true)
  }, 60_000)
})
