/** The svc CLI as a real child process: vitest runs on Node 24, which runs the TypeScript sources as they are. */
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { afterEach, beforeAll, beforeEach } from 'vitest'
import { loadApiRoutes, type SvcServer, type SvcServerOptions, startSvcServer } from '../../src/node.ts'
import type { RuntimeApiRoute } from '../../src/types.ts'
import { recordingLogger } from '../_helpers.ts'

const cli = fileURLToPath(new URL('../../src/cli/main.ts', import.meta.url))

export interface CliOutcome {
  code: number | null
  stdout: string
  stderr: string
  /** True when the process had to be killed because it did not end on its own. */
  killed: boolean
}

/**
 * Runs `svc <args>` (with `env` added to this process's environment) and resolves once the process ended and its output is read. A process
 * still up after `boundMs` is killed, so one that never ends fails the test instead of hanging it.
 */
export function svc(
  args: string[],
  { cwd, env, boundMs = 15_000 }: { cwd?: string; env?: Record<string, string>; boundMs?: number } = {},
): Promise<CliOutcome> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [cli, ...args], { cwd, env: { ...process.env, NO_COLOR: '1', ...env } })
    let stdout = ''
    let stderr = ''
    let killed = false
    const timer = setTimeout(() => {
      killed = true
      child.kill('SIGKILL')
    }, boundMs)
    child.stdout.on('data', (chunk) => (stdout += chunk))
    child.stderr.on('data', (chunk) => (stderr += chunk))
    child.on('error', (error) => {
      clearTimeout(timer)
      reject(error)
    })
    child.on('close', (code) => {
      clearTimeout(timer)
      resolve({ code, stdout, stderr, killed })
    })
  })
}

/**
 * A server of `test/fixtures/<fixture>` for each test (so that each lists
 * only its own runs), with `secret` as its task secret; `cli(args)` runs
 * `svc <args>` against it.
 */
export function fixtureServerPerTest(
  fixture: string,
  secret: string,
): {
  readonly server: SvcServer
  /** The fixture's routes, as loaded. */
  readonly apiRoutes: RuntimeApiRoute[]
  /** Closes this test's server and starts another with `options` in place of the fixture's. */
  restart(options: Partial<SvcServerOptions>): Promise<void>
  cli(args: string[], env?: Record<string, string>): Promise<CliOutcome>
} {
  const root = fileURLToPath(new URL(`../fixtures/${fixture}`, import.meta.url))
  let apiRoutes: RuntimeApiRoute[]
  let server: SvcServer
  const start = (options: Partial<SvcServerOptions> = {}) =>
    startSvcServer({
      apiRoutes,
      pages: [],
      port: 0,
      env: { SVC_TASK_SECRET: secret, NODE_ENV: 'test' },
      installSignalHandlers: false,
      logger: recordingLogger(),
      ...options,
    })
  beforeAll(async () => {
    apiRoutes = await loadApiRoutes({ root })
  })
  beforeEach(async () => {
    server = await start()
  })
  afterEach(() => server.close())
  return {
    get server() {
      return server
    },
    get apiRoutes() {
      return apiRoutes
    },
    async restart(options) {
      await server.close()
      server = await start(options)
    },
    cli: (args, env = {}) => svc(args, { env: { SVC_TASK_URL: server.url, SVC_TASK_SECRET: secret, ...env } }),
  }
}
