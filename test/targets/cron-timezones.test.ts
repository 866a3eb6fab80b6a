import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildApp } from '../../src/build/build.ts'

async function write(root: string, file: string, contents: string): Promise<void> {
  await mkdir(dirname(join(root, file)), { recursive: true })
  await writeFile(join(root, file), contents)
}

describe('scheduled tasks with a time zone, built for each target', () => {
  let root: string
  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'svc-tz-'))
    await write(
      root,
      'src/api/jobs/morning.ts',
      `export const route = { kind: 'task', timezone: 'Europe/Paris' } as const\nexport const schedule = '0 9 * * *'\nexport async function POST() { return 'good morning' }\n`,
    )
    await write(
      root,
      'src/api/jobs/nightly.ts',
      `export const route = { kind: 'task', timezone: 'UTC' } as const\nexport const schedule = '0 2 * * *'\nexport async function POST() { return 'night' }\n`,
    )
    await write(root, 'src/api/jobs/hourly.ts', `export const kind = 'task'\nexport const schedule = '0 * * * *'\nexport async function POST() { return 'hour' }\n`)
  })
  afterAll(() => rm(root, { recursive: true, force: true }))

  // Cloudflare cron triggers and Vercel cron jobs fire on UTC only: without a
  // warning, a task meant for 09:00 in Paris would silently run at 09:00 UTC.
  for (const target of ['cloudflare', 'vercel'] as const) {
    it(`${target}: warns that a task's time zone is not honored, naming the task`, async () => {
      const { warnings } = await buildApp({ root, target })
      expect(warnings).toEqual([
        `[svc] ${target} fires cron schedules in UTC; the time zone of 1 scheduled task(s) is not applied: jobs.morning ('0 9 * * *', Europe/Paris) — write the schedule in UTC or deploy to a host that applies time zones`,
      ])
    })
  }

  for (const target of ['node', 'lambda'] as const) {
    it(`${target}: applies time zones and does not warn`, async () => {
      const { warnings } = await buildApp({ root, target })
      expect(warnings).toEqual([])
    })
  }
})
