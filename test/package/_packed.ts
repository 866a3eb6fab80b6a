/**
 * svc as a user gets it: `npm pack` in the repository (its prepack script
 * builds dist/), then `npm install <tarball>` into a new app in the system
 * temp directory, with no link back to the checkout. Commands run in a user's
 * environment: Node 24 first on PATH, and none of the npm_* variables or the
 * node_modules/.bin directories of the npm script that runs the tests.
 */
import { spawn, spawnSync } from 'node:child_process'
import { existsSync, readFileSync, realpathSync } from 'node:fs'
import { mkdir, mkdtemp, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { delimiter, dirname, join, sep } from 'node:path'
import { fileURLToPath } from 'node:url'

export const REPO = fileURLToPath(new URL('../../', import.meta.url))

/** Node 24, from the repository's `node` devDependency (what `npx` runs under in a checkout). */
export const NODE24 = realpathSync(join(REPO, 'node_modules/node/bin/node'))

/** The package.json of the checkout. */
export const PKG = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as {
  version: string
  engines: { node: string }
  exports: Record<string, string | { types: string; default: string }>
  files: string[]
  devDependencies: Record<string, string>
}

/** The environment of a user's shell with `nodeDir` first on PATH. */
export function userEnv(nodeDir = dirname(NODE24)): NodeJS.ProcessEnv {
  const PATH = [nodeDir, ...(process.env.PATH ?? '').split(delimiter).filter((dir) => !dir.endsWith(`node_modules${sep}.bin`))].join(
    delimiter,
  )
  const env: NodeJS.ProcessEnv = { ...process.env, PATH, NO_COLOR: '1' }
  // NODE_ENV too: the test runner sets it to `test`, which a user's shell does not.
  for (const name of Object.keys(env)) if (/^(npm_|INIT_CWD$|NODE_OPTIONS$|NODE_ENV$|VITEST)/i.test(name)) delete env[name]
  return env
}

export interface Outcome {
  code: number | null
  stdout: string
  stderr: string
}

/** Runs a command to its end; one still running after `boundMs` is killed, so that it fails the test rather than hanging it. */
export function run(
  command: string,
  args: string[],
  { cwd, env = userEnv(), boundMs = 120_000 }: { cwd: string; env?: NodeJS.ProcessEnv; boundMs?: number },
): Promise<Outcome> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    const timer = setTimeout(() => child.kill('SIGKILL'), boundMs)
    child.stdout.on('data', (chunk) => (stdout += chunk))
    child.stderr.on('data', (chunk) => (stderr += chunk))
    child.on('error', (error) => {
      clearTimeout(timer)
      reject(error)
    })
    child.on('close', (code) => {
      clearTimeout(timer)
      resolve({ code, stdout, stderr })
    })
  })
}

/** Like `run`, but throws with the command's output unless it exits with 0. */
export async function runOk(command: string, args: string[], options: Parameters<typeof run>[2]): Promise<Outcome> {
  const outcome = await run(command, args, options)
  if (outcome.code !== 0) {
    throw new Error(`${command} ${args.join(' ')} exited with ${outcome.code}:\n${outcome.stdout}\n${outcome.stderr}`)
  }
  return outcome
}

export interface Server {
  /** The URL the process printed. */
  url: string
  output(): string
  /** Ends the process and every process it started. */
  stop(): Promise<void>
}

/**
 * Starts a long-running command in a process group of its own (`npx` starts
 * npm, which starts node), and resolves once its output matches `ready`,
 * whose first group is the URL it serves on.
 */
export function serve(
  command: string,
  args: string[],
  { cwd, env, ready }: { cwd: string; env: NodeJS.ProcessEnv; ready: RegExp },
): Promise<Server> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] })
    let output = ''
    const exited = new Promise<void>((done) => child.once('exit', () => done()))
    const stop = async () => {
      if (child.exitCode === null && child.signalCode === null) {
        try {
          process.kill(-child.pid!, 'SIGKILL')
        } catch {
          // The group has ended already.
        }
        await exited
      }
    }
    const timer = setTimeout(() => {
      void stop()
      reject(new Error(`${command} ${args.join(' ')} printed nothing matching ${ready} in 60 s:\n${output}`))
    }, 60_000)
    const onData = (chunk: Buffer) => {
      output += chunk
      const match = output.match(ready)
      if (match) {
        clearTimeout(timer)
        resolve({ url: match[1], output: () => output, stop })
      }
    }
    child.stdout.on('data', onData)
    child.stderr.on('data', onData)
    child.once('exit', (code) => {
      clearTimeout(timer)
      reject(new Error(`${command} ${args.join(' ')} exited with ${code}:\n${output}`))
    })
  })
}

/** Polls `read` until it returns a value other than undefined, for up to `timeoutMs`. */
export async function eventually<T>(read: () => Promise<T | undefined>, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const value = await read()
    if (value !== undefined) return value
    if (Date.now() > deadline) throw new Error(`nothing after ${timeoutMs} ms`)
    await new Promise((done) => setTimeout(done, 50))
  }
}

/** The app a user writes: a route, a task with two durable steps and a file that enqueues it by name. */
export const APP_FILES: Record<string, string> = {
  'package.json': `${JSON.stringify({ name: 'packed-app', private: true, type: 'module' }, null, 2)}\n`,
  'src/api/hello.ts': `export function GET() {
  return { hello: 'world' }
}
`,
  'src/api/jobs/report.ts': `import { defineTask } from 'svcjs'
import * as v from 'valibot'

export const route = { kind: 'task' } as const
export const input = v.object({ n: v.number() })

export const POST = defineTask({
  input,
  handler: async (ctx) => {
    const doubled = await ctx.step.run('double', () => ctx.input.n * 2)
    const squared = await ctx.step.run('square', () => doubled * doubled)
    return { doubled, squared }
  },
})
`,
  'src/client.ts': `import { enqueue, type TaskName } from 'svcjs'

export async function report(n: number) {
  const name: TaskName = 'jobs.report'
  return enqueue(name, { n })
}

export async function mistakes() {
  // @ts-expect-error unknown task name
  await enqueue('jobs.reprot', { n: 2 })
  // @ts-expect-error wrong payload: n is a number
  await enqueue('jobs.report', { n: 'two' })
  // @ts-expect-error missing payload: the task's input requires one
  await enqueue('jobs.report')
}
`,
  // What a user of \`svc types\` writes: the generated registry included,
  // packages resolved as Node resolves them, no @types/node needed, and
  // skipLibCheck as \`tsc --init\` sets it (checking lib.dom and every
  // package's declarations would take most of this file's time).
  'tsconfig.json': `${JSON.stringify(
    {
      compilerOptions: {
        target: 'ES2023',
        lib: ['ES2023', 'DOM'],
        module: 'nodenext',
        moduleResolution: 'nodenext',
        allowImportingTsExtensions: true,
        strict: true,
        noEmit: true,
        skipLibCheck: true,
        types: [],
      },
      include: ['.svc/types.d.ts', 'src'],
    },
    null,
    2,
  )}\n`,
}

export interface Packed {
  /** The temp directory holding the tarball and the app. */
  dir: string
  tarball: string
  /** Paths inside the tarball, from `npm pack --json`. */
  files: string[]
  /** The app, with svc installed from the tarball. */
  app: string
}

/** Runs `npm pack` on the package in `cwd` (svc by default; its prepack script builds dist/) and writes the tarball into `dir`. */
export async function pack(dir: string, cwd = REPO): Promise<{ tarball: string; files: string[]; builds: number }> {
  const packed = await runOk('npm', ['pack', '--pack-destination', dir, '--json'], { cwd, env: userEnv(), boundMs: 300_000 })
  // Only the JSON goes to stdout; the prepack build writes to stderr.
  const [report] = JSON.parse(packed.stdout.slice(packed.stdout.indexOf('['))) as Array<{
    filename: string
    files: Array<{ path: string }>
  }>
  const tarball = join(dir, report.filename)
  if (!existsSync(tarball)) throw new Error(`npm pack reported ${report.filename}, which is not in ${dir}`)
  // How many times the prepack script built dist/: unbuild prints the total size once per build (its
  // other lines go quiet where TEST is set, as under the test runner).
  // biome-ignore lint/suspicious/noControlCharactersInRegex: the escape that starts a terminal color
  const plain = `${packed.stdout}\n${packed.stderr}`.replace(/\u001b\[[0-9;]*m/g, '')
  const builds = (plain.match(/Total dist size/g) ?? []).length
  return { tarball, files: report.files.map((file) => file.path), builds }
}

/** Installs svc, as the project's global setup packed it, into a new app in the system temp directory. */
export async function packAndInstall(): Promise<Packed> {
  const dir = await mkdtemp(join(tmpdir(), 'svc-packed-'))
  const env = userEnv()
  // Imported here, not at the top: the global setup imports this module outside a test worker.
  const { inject } = await import('vitest')
  const { tarball, files } = inject('svcPack')

  const app = join(dir, 'app')
  for (const [file, contents] of Object.entries(APP_FILES)) {
    await mkdir(dirname(join(app, file)), { recursive: true })
    await writeFile(join(app, file), contents)
  }
  // valibot at the version the repository tests with, for the task's input schema.
  const valibot = `valibot@${PKG.devDependencies.valibot}`
  await runOk('npm', ['install', tarball, valibot, '--prefer-offline', '--no-audit', '--no-fund'], { cwd: app, env, boundMs: 300_000 })
  return { dir, tarball, files, app }
}

/** A Node older than package.json `engines` allows on this machine (the system's, beside the devDependency's 24), or undefined. */
export function olderNode(): { path: string; version: string } | undefined {
  const [major, minor] = PKG.engines.node
    .replace(/^>=\s*/, '')
    .split('.')
    .map(Number)
  for (const path of ['/usr/bin/node', '/usr/local/bin/node', '/bin/node']) {
    if (!existsSync(path)) continue
    const out = spawnVersion(path)
    if (!out) continue
    const [a, b] = out.replace(/^v/, '').split('.').map(Number)
    if (a < major || (a === major && b < minor)) return { path, version: out }
  }
  return undefined
}

function spawnVersion(path: string): string | undefined {
  const result = spawnSync(path, ['--version'], { encoding: 'utf8' })
  return result.status === 0 ? result.stdout.trim() : undefined
}
