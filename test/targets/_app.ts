import { cp, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll } from 'vitest'
import { buildApp, type BuildResult } from '../../src/build/build.ts'
import type { TargetName } from '../../src/build/target.ts'

/**
 * A fresh copy of a fixture app (the targets app unless named) in a temp dir,
 * so builds never write into the repository.
 */
export async function copyFixtureApp(name = 'targets-app'): Promise<{ root: string; cleanup: () => Promise<void> }> {
  const root = await mkdtemp(join(tmpdir(), 'svc-targets-'))
  await cp(fileURLToPath(new URL(`../fixtures/${name}`, import.meta.url)), root, { recursive: true })
  return { root, cleanup: () => rm(root, { recursive: true, force: true }) }
}

/** A temporary app made of `files` (path from the app root → contents), for build cases the fixtures do not cover. */
export async function writeApp(files: Record<string, string>): Promise<{ root: string; cleanup: () => Promise<void> }> {
  const root = await mkdtemp(join(tmpdir(), 'svc-targets-'))
  for (const [file, contents] of Object.entries(files)) {
    await mkdir(dirname(join(root, file)), { recursive: true })
    await writeFile(join(root, file), contents)
  }
  return { root, cleanup: () => rm(root, { recursive: true, force: true }) }
}

/**
 * Scheduled tasks in several time zones: one in Europe/Paris, one in UTC
 * said outright, one in UTC by default.
 */
export const ZONED_TASKS: Record<string, string> = {
  'src/api/jobs/morning.ts': `export const route = { kind: 'task', timezone: 'Europe/Paris' } as const\nexport const schedule = '0 9 * * *'\nexport async function POST() { return 'good morning' }\n`,
  'src/api/jobs/nightly.ts': `export const route = { kind: 'task', timezone: 'UTC' } as const\nexport const schedule = '0 2 * * *'\nexport async function POST() { return 'night' }\n`,
  'src/api/jobs/hourly.ts': `export const kind = 'task'\nexport const schedule = '0 * * * *'\nexport async function POST() { return 'hour' }\n`,
}

/** The warning of a target whose cron fires in UTC only, for ZONED_TASKS. */
export const utcOnlyWarning = (target: string) =>
  `[svc] ${target} fires cron schedules in UTC; the time zone of 1 scheduled task(s) is not applied: jobs.morning ('0 9 * * *', Europe/Paris) — write the schedule in UTC or deploy to a host that applies time zones`

export interface BuiltApp {
  root: string
  build: BuildResult
}

/**
 * The fixture app built for `target` once per test file, on first use, and
 * shared by every suite of the file (the contract and the target's own
 * cases). Call it at the top level of a test file: the copy is removed after
 * the file's tests.
 */
export function builtOnce(target: TargetName, fixture = 'targets-app'): () => Promise<BuiltApp> {
  let built: Promise<BuiltApp & { cleanup: () => Promise<void> }> | undefined
  afterAll(async () => {
    const app = await built?.catch(() => undefined)
    await app?.cleanup()
  })
  return () =>
    (built ??= copyFixtureApp(fixture).then(async (app) => {
      try {
        return { ...app, build: await buildApp({ root: app.root, target }) }
      } catch (error) {
        await app.cleanup()
        throw error
      }
    }))
}

/** Polls a run until it leaves `running`/`scheduled`. */
export async function pollRun(get: (id: string) => Promise<Response>, id: string, timeoutMs = 5000): Promise<any> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const res = await get(id)
    const run = (await res.json()) as { status: string }
    if (run.status !== 'running' && run.status !== 'scheduled') return run
    if (Date.now() > deadline) throw new Error(`run ${id} still ${run.status} after ${timeoutMs} ms`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

/**
 * Waits until `read()` (a process's output collected so far) matches
 * `pattern`, and resolves with the match. Output arrives on its own pipe, in
 * no fixed order with other events, so a line that is due is waited for;
 * the deadline only turns a line that never comes into a failure.
 */
export async function waitForOutput(read: () => string, pattern: RegExp, timeoutMs = 5000): Promise<RegExpMatchArray> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const match = read().match(pattern)
    if (match) return match
    if (Date.now() > deadline) throw new Error(`no output matched ${pattern} after ${timeoutMs} ms; got:\n${read()}`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

/** Builds an app made of `files` for `target` and resolves to one generated JSON file of it (path from the app root). */
export async function builtJson(files: Record<string, string>, target: TargetName, file: string): Promise<any> {
  const app = await writeApp(files)
  try {
    await buildApp({ root: app.root, target })
    return JSON.parse(await readFile(join(app.root, file), 'utf8'))
  } finally {
    await app.cleanup()
  }
}
