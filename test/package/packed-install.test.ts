// svc as a user installs it: the tarball `npm pack` makes, installed into a
// new app outside the repository, checked by the field's package linters and
// then used through its bin (Node 24) for every command and build target.
// Packing (which builds dist/) and installing happen once, shared by every
// case; the whole file takes a minute or two.
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { Miniflare, type MiniflareOptions } from 'miniflare'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import buildConfig from '../../build.config.ts'
import { MIN_NODE_VERSION } from '../../src/runtime/node-version.ts'
import { TARGET_NAMES, type TargetName } from '../../src/self/targets.ts'
import { runtimeBinary } from '../targets/_server-runtime.ts'
import {
  eventually,
  NODE24,
  olderNode,
  type Packed,
  packAndInstall,
  PKG,
  REPO,
  run,
  runOk,
  type Server,
  serve,
  userEnv,
} from './_packed.ts'

const TASK_SECRET = 'packed-secret-0123456789abcdef012345'
const TSC = join(REPO, 'node_modules/typescript/bin/tsc')

let packed: Packed
beforeAll(async () => {
  packed = await packAndInstall()
}, 600_000)
afterAll(async () => {
  if (packed) await rm(packed.dir, { recursive: true, force: true })
})

/** `svc <args>` in the app, through the bin npm linked, as an npm script or `npx svc` runs it. */
const svc = (args: string[], boundMs?: number) => run(join(packed.app, 'node_modules/.bin/svc'), args, { cwd: packed.app, boundMs })

/** The public subpaths of package.json `exports`, without `./package.json`. */
const SUBPATHS = Object.keys(PKG.exports).filter((subpath) => subpath !== './package.json')

describe('the package', () => {
  it('holds bin, dist, LICENSE, README.md and package.json, and no sources or tests', () => {
    const tops = new Set(packed.files.map((file) => file.split('/')[0]))
    expect([...tops].sort()).toEqual(['LICENSE', 'README.md', 'bin', 'dist', 'package.json'])
    expect(packed.files.filter((file) => /\.ts$|(^|\/)test\//.test(file))).toEqual([])
    expect(packed.files).toContain('dist/cli.mjs')
  })

  it('exports one subpath per entry it builds, each file in the tarball with its types', () => {
    const built = buildConfig
      .flatMap((config) => config.entries ?? [])
      .map((entry) => (typeof entry === 'string' ? entry : entry.name))
      .filter((name) => name !== 'cli')
    expect([...SUBPATHS].sort()).toEqual(built.map((name) => (name === 'index' ? '.' : `./${name}`)).sort())
    for (const subpath of SUBPATHS) {
      const target = PKG.exports[subpath] as { types: string; default: string }
      expect(Object.keys(target)).toEqual(['types', 'default'])
      expect(packed.files).toContain(target.types.slice(2))
      expect(packed.files).toContain(target.default.slice(2))
    }
  })

  it('names the oldest Node it runs on once: engines, bin/svc.mjs and the entries agree', () => {
    const minimum = PKG.engines.node.replace(/^>=\s*/, '')
    expect(`${minimum}.0`.split('.').slice(0, 3).join('.')).toBe(MIN_NODE_VERSION)
    const bin = readFileSync(join(packed.app, 'node_modules/svcjs/bin/svc.mjs'), 'utf8')
    expect(bin).toContain(`const MINIMUM = [${minimum.split('.').join(', ')}]`)
  })

  it('passes publint', async () => {
    const { code, stdout } = await run(join(REPO, 'node_modules/.bin/publint'), ['run', packed.tarball, '--strict'], { cwd: packed.dir })
    expect(stdout).toContain('All good!')
    expect(code).toBe(0)
  })

  // The esm-only profile leaves out node10 resolution (which predates
  // `exports`) and require() from CommonJS: svc is ES modules only, for a Node
  // that loads them. Every entry must resolve, with its types, for Node's own
  // ES module resolution and for bundlers.
  it('passes Are the Types Wrong for an ESM-only package: every entry resolves to its types', async () => {
    const attw = join(REPO, 'node_modules/.bin/attw')
    const { code, stdout } = await run(attw, [packed.tarball, '--profile', 'esm-only', '--format', 'json'], { cwd: packed.dir })
    expect(code).toBe(0)
    const { analysis } = JSON.parse(stdout)
    expect(Object.keys(analysis.entrypoints).sort()).toEqual([...SUBPATHS, './package.json'].sort())
    for (const subpath of SUBPATHS) {
      const target = PKG.exports[subpath] as { types: string; default: string }
      for (const kind of ['node16-esm', 'bundler']) {
        const resolution = analysis.entrypoints[subpath].resolutions[kind]
        expect(resolution.resolution?.fileName, `${subpath} (${kind})`).toBe(`/node_modules/svcjs/${target.types.slice(2)}`)
        expect(resolution.implementationResolution?.fileName, `${subpath} (${kind})`).toBe(`/node_modules/svcjs/${target.default.slice(2)}`)
        expect(resolution.visibleProblems ?? [], `${subpath} (${kind})`).toEqual([])
      }
    }
  })

  it('imports every entry from the app on Node 24', async () => {
    const script = `for (const s of ${JSON.stringify(SUBPATHS.map((subpath) => subpath.replace(/^\./, 'svcjs')))}) console.log(s, Object.keys(await import(s)).length)`
    const { stdout } = await runOk(NODE24, ['--input-type=module', '-e', script], { cwd: packed.app })
    for (const subpath of SUBPATHS) expect(stdout).toMatch(new RegExp(`^${subpath.replace(/^\./, 'svcjs')} [1-9]\\d*$`, 'm'))
  })
})

describe('svcjs/testing from the package', () => {
  /** A unit test of the app's task as a user writes it, for `runner`'s test API. */
  const unitTest = (runner: 'node:test' | 'bun:test') => `import { ${runner === 'bun:test' ? 'expect, test' : 'test'} } from '${runner}'
${runner === 'node:test' ? "import assert from 'node:assert/strict'\n" : ''}import { createTestRuntime } from 'svcjs/testing'

test('report doubles, then squares, on the virtual clock', async () => {
  const t = await createTestRuntime({ root: '.', start: '2031-05-01T00:00:00Z' })
  t.mockStep('jobs.report', 'double', 10)
  const run = await t.run('jobs.report', { n: 2 })
  const expected = { status: 'completed', createdAt: '2031-05-01T00:00:00.000Z', result: { doubled: 10, squared: 100 } }
  const got = { status: run.status, createdAt: run.createdAt, result: run.result }
  ${runner === 'bun:test' ? 'expect(got).toEqual(expected)' : 'assert.deepEqual(got, expected)'}
  await t.close()
})
`

  it("runs the app's task in a unit test under node --test", async () => {
    const file = join(packed.app, 'test/report.node.test.ts')
    mkdirSync(dirname(file), { recursive: true })
    writeFileSync(file, unitTest('node:test'))
    const { stdout } = await runOk(NODE24, ['--test', file], { cwd: packed.app })
    expect(stdout).toMatch(/^ℹ pass 1$/m)
  })

  it('runs it under bun test', async () => {
    const file = join(packed.app, 'test/report.bun.test.ts')
    mkdirSync(dirname(file), { recursive: true })
    writeFileSync(file, unitTest('bun:test'))
    const { stdout, stderr } = await runOk(runtimeBinary('bun'), ['test', file], { cwd: packed.app })
    expect(`${stdout}${stderr}`).toMatch(/^ 1 pass$/m)
  })
})

describe('the svc command from the package', () => {
  it('npx svc --help lists the commands', async () => {
    const { code, stdout } = await run('npx', ['svc', '--help'], { cwd: packed.app })
    expect(code).toBe(0)
    expect(stdout).toContain(`(svc v${PKG.version})`)
    for (const command of ['routes', 'runtime', 'build', 'tasks', 'types', 'dev'])
      expect(stdout).toMatch(new RegExp(`^\\s+${command}\\s+\\S`, 'm'))
  })

  it('svc routes inspect, runtime advise and tasks list describe the app', async () => {
    const routes = await svc(['routes', 'inspect'])
    expect(routes.code).toBe(0)
    expect(routes.stdout).toMatch(/^\/api\/hello\s+serverless\s+-\s+GET/m)
    expect(routes.stdout).toMatch(/^\/api\/jobs\/report\s+task\s+jobs\.report\s+POST/m)

    const advice = await svc(['runtime', 'advise'])
    expect(advice.code).toBe(0)
    expect(advice.stdout).toContain('2 routes, 0 warnings')

    const tasks = await svc(['tasks', 'list', '--json'])
    expect(tasks.code).toBe(0)
    expect(JSON.parse(tasks.stdout).tasks).toMatchObject([{ name: 'jobs.report', path: '/api/jobs/report' }])
  })

  it('svc tasks run runs the task through its steps to its end', async () => {
    const { code, stdout } = await svc(['tasks', 'run', 'jobs.report', '--input', '{"n":3}', '--json'])
    expect(code).toBe(0)
    expect(JSON.parse(stdout)).toMatchObject({
      ok: true,
      taskName: 'jobs.report',
      steps: { double: { status: 'completed', output: 6 }, square: { status: 'completed', output: 36 } },
      result: { doubled: 6, squared: 36 },
    })
  })

  // The app's mistakes are marked with ts-expect-error, so tsc fails unless
  // each of them is an error: an enqueue() the registry did not type would
  // leave the markers unused.
  it('svc types types enqueue() by task name, with the declarations of the installed package', async () => {
    const types = await svc(['types'])
    expect(types.code).toBe(0)
    expect(types.stdout).toMatch(/^(Wrote|Up to date:) .*\(1 task\)\n$/)
    const tsc = await run(NODE24, [TSC, '-p', '.', '--pretty', 'false', '--listFiles'], { cwd: packed.app })
    const files = tsc.stdout.split('\n').filter((line) => line.startsWith('/'))
    expect(tsc.stdout.split('\n').filter((line) => line.includes('error TS'))).toEqual([])
    expect(tsc.code).toBe(0)
    expect(files).toContain(join(packed.app, 'node_modules/svcjs/dist/index.d.mts'))
    // Only TypeScript's own lib files come from the checkout.
    expect(files.filter((file) => file.startsWith(REPO) && !file.startsWith(join(REPO, 'node_modules/typescript/lib/')))).toEqual([])
  }, 90_000)

  describe('svc dev', () => {
    let dev: Server
    beforeAll(async () => {
      dev = await serve('npx', ['svc', 'dev', '--port', '0'], { cwd: packed.app, env: userEnv(), ready: /svc dev: (http:\/\/\S+)/ })
    }, 90_000)
    afterAll(() => dev?.stop())

    it('serves a route', async () => {
      const res = await fetch(`${dev.url}/api/hello`)
      expect(res.status).toBe(200)
      expect(await res.json()).toEqual({ hello: 'world' })
    })

    it('runs a task started over the admin surface, and shows the run', async () => {
      const started = await fetch(`${dev.url}/__tasks/jobs.report`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ n: 4 }),
      })
      expect(started.status).toBe(202)
      const { id } = (await started.json()) as { id: string }
      const run = await eventually(async () => {
        const body = (await (await fetch(`${dev.url}/__tasks/${id}`)).json()) as { status: string }
        return body.status === 'completed' ? body : undefined
      })
      expect(run).toMatchObject({ id, taskName: 'jobs.report', result: { doubled: 8, squared: 64 } })
    })

    it('serves the dashboard', async () => {
      const res = await fetch(`${dev.url}/__svc/dashboard`)
      expect(res.status).toBe(200)
      expect(res.headers.get('content-type')).toMatch(/^text\/html/)
      expect(await res.text()).toContain('<title>svc runs</title>')
    })
  })
})

describe('svc build from the package', () => {
  // Every target builds here, bun's and deno's too: a build only bundles,
  // and needs neither runtime on the machine.
  beforeAll(async () => {
    for (const target of TARGET_NAMES) {
      const built = await svc(['build', '--target', target], 60_000)
      if (built.code !== 0) throw new Error(`svc build --target ${target} exited with ${built.code}:\n${built.stdout}\n${built.stderr}`)
    }
  }, 60_000 * TARGET_NAMES.length)

  it('writes the output of every target', async () => {
    const { stdout } = await runOk('find', ['.output', '.vercel', '-type', 'f', '-not', '-path', '*/.svc/*'], { cwd: packed.app })
    const files = stdout.split('\n').filter(Boolean).sort()
    // Typed by target name, so a target added to TARGET_NAMES does not compile here until its output is listed.
    const outputs: Record<TargetName, string[]> = {
      node: ['.output/node/server.mjs'],
      cloudflare: ['.output/cloudflare/index.mjs', '.output/cloudflare/wrangler.json'],
      lambda: ['.output/lambda/index.mjs'],
      vercel: ['.vercel/output/config.json', '.vercel/output/functions/__svc.func/index.mjs'],
      bun: ['.output/bun/server.mjs'],
      deno: ['.output/deno/server.mjs'],
    }
    for (const name of TARGET_NAMES) for (const file of outputs[name]) expect(files, name).toContain(file)
  })

  describe('the node build', () => {
    let server: Server
    beforeAll(async () => {
      const out = join(packed.app, '.output/node')
      const env = { ...userEnv(), PORT: '0', HOST: '127.0.0.1', NODE_ENV: 'production', SVC_TASK_SECRET: TASK_SECRET }
      server = await serve(NODE24, ['server.mjs'], { cwd: out, env, ready: /listening on (http:\/\/\S+)/ })
    }, 60_000)
    afterAll(() => server?.stop())

    it('serves a route and runs a triggered task', async () => {
      expect(await (await fetch(`${server.url}/api/hello`)).json()).toEqual({ hello: 'world' })
      const headers = { authorization: `Bearer ${TASK_SECRET}`, 'content-type': 'application/json' }
      const started = await fetch(`${server.url}/__tasks/jobs.report`, { method: 'POST', headers, body: JSON.stringify({ n: 5 }) })
      expect(started.status).toBe(202)
      const { id } = (await started.json()) as { id: string }
      const run = await eventually(async () => {
        const body = (await (await fetch(`${server.url}/__tasks/${id}`, { headers })).json()) as { status: string }
        return body.status === 'completed' ? body : undefined
      })
      expect(run).toMatchObject({ id, result: { doubled: 10, squared: 100 } })
    })
  })

  describe('the cloudflare build, in miniflare', () => {
    let mf: Miniflare
    beforeAll(async () => {
      // Configured as `wrangler dev` configures it from the generated wrangler.json, the tasks Durable Object included.
      const out = join(packed.app, '.output/cloudflare')
      const { unstable_getMiniflareWorkerOptions } = await import('wrangler')
      const { workerOptions, main } = unstable_getMiniflareWorkerOptions(join(out, 'wrangler.json'))
      mf = new Miniflare({
        ...(workerOptions as object),
        scriptPath: main!,
        modulesRoot: out,
        modules: true,
        bindings: { SVC_TASK_SECRET: TASK_SECRET },
      } as MiniflareOptions)
      await mf.ready
    }, 60_000)
    afterAll(() => mf?.dispose())

    it('serves a route and runs a triggered task', async () => {
      const hello = await mf.dispatchFetch('http://localhost/api/hello')
      expect(await hello.json()).toEqual({ hello: 'world' })
      const headers = { authorization: `Bearer ${TASK_SECRET}`, 'content-type': 'application/json' }
      const started = await mf.dispatchFetch('http://localhost/__tasks/jobs.report', {
        method: 'POST',
        headers,
        body: JSON.stringify({ n: 6 }),
      })
      expect(started.status).toBe(202)
      const { id } = (await started.json()) as { id: string }
      const run = await eventually(async () => {
        const body = (await (await mf.dispatchFetch(`http://localhost/__tasks/${id}`, { headers })).json()) as { status: string }
        return body.status === 'completed' ? body : undefined
      })
      expect(run).toMatchObject({ id, result: { doubled: 12, squared: 144 } })
    })
  })
})

// The system's Node, where it is older than svc supports (Debian's is 20).
const old = olderNode()

describe.skipIf(!old)(`on ${old?.version ?? 'a Node older than engines allows'}`, () => {
  const needs = `svc needs Node.js ${PKG.engines.node.replace(/^>=\s*/, '')} or later (this is Node ${old?.version})`
  const advice = 'Install Node 24 LTS from https://nodejs.org, or with a version manager'

  it('npx svc says which Node it needs and how to get one', async () => {
    const { code, stdout, stderr } = await run('npx', ['svc', '--help'], { cwd: packed.app, env: userEnv(dirname(old!.path)) })
    expect(stdout).toBe('')
    expect(stderr).toContain(needs)
    expect(stderr).toContain(advice)
    expect(code).toBe(1)
  })

  it("import 'svcjs' says which Node it needs and how to get one", async () => {
    for (const specifier of ['svcjs', 'svcjs/node']) {
      const { code, stderr } = await run(old!.path, ['--input-type=module', '-e', `import ${JSON.stringify(specifier)}`], {
        cwd: packed.app,
      })
      expect(stderr).toContain(`Error: ${needs}`)
      expect(stderr).toContain(advice)
      expect(code).toBe(1)
    }
  })
})

describe('bin/svc.mjs in a copy of svc packed without its build', () => {
  it('says that dist/ is missing and how to get a package that has it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-unbuilt-'))
    try {
      mkdirSync(join(dir, 'bin'))
      copyFileSync(join(REPO, 'bin/svc.mjs'), join(dir, 'bin/svc.mjs'))
      const { code, stderr } = await run(NODE24, [join(dir, 'bin/svc.mjs'), '--help'], { cwd: dir })
      expect(stderr).toMatch(/^This copy of svc \(.*svc-unbuilt-.*\) has no dist\/cli\.mjs/)
      expect(stderr).toContain('`npm pack`, which builds dist/ first')
      expect(code).toBe(1)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
