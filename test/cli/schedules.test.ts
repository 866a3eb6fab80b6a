// `svc schedules` against a real server on port 0 holding the runs-cli fixture.
import { describe, expect, it } from 'vitest'
import type { ScheduleRecord } from '../../src/types.ts'
import { fixtureServerPerTest } from './_svc.ts'

const SECRET = 'schedules-cli-secret-0123456789abcd'
const fixture = fixtureServerPerTest('runs-cli', SECRET)
const schedules = (args: string[]) => fixture.cli(['schedules', ...args])

describe('svc schedules', () => {
  it('makes, lists, shows, changes, pauses, resumes, runs now, backfills and deletes a schedule', async () => {
    const made = await schedules(['create', 'pipeline', '--cron', '0 9 * * *', '--input', '{"size":3}', '--key', 'acme', '--json'])
    expect(made.code, made.stderr).toBe(0)
    const { id } = JSON.parse(made.stdout) as ScheduleRecord
    const listed = await schedules(['list'])
    expect(listed.stdout).toMatch(
      new RegExp(`^ID +TASK +CRON +TIMEZONE +KEY +NEXT +LAST RUN\\n${id} +pipeline +0 9 \\* \\* \\* +UTC +acme +\\d{4}-`),
    )
    expect((await schedules(['get', id])).stdout).toContain(`Enabled schedule ${id} of pipeline (0 9 * * *): next tick `)
    expect((await schedules(['update', id, '--timezone', 'Asia/Tokyo'])).stdout).toContain(
      `Changed schedule ${id} of pipeline (0 9 * * * Asia/Tokyo)`,
    )
    expect((await schedules(['pause', id])).stdout).toBe(
      `Paused schedule ${id} of pipeline (0 9 * * * Asia/Tokyo): paused, no next tick.\n`,
    )
    expect((await schedules(['resume', id])).stdout).toContain(`Resumed schedule ${id}`)
    const now = await schedules(['trigger', id, '--json'])
    const { runId } = JSON.parse(now.stdout) as { runId: string }
    expect(await fixture.server.runtime.waitForRun(runId)).toMatchObject({ status: 'completed', schedule: { id }, result: { saved: 3 } })
    const back = await schedules(['backfill', id, '--from', '2026-03-01T00:00:00Z', '--to', '2026-03-03T00:00:00Z'])
    // 09:00 in Tokyo is midnight UTC: the first of March is in, the third is not.
    expect(
      back.stdout
        .trim()
        .split('\n')
        .slice(1)
        .map((row) => row.split(/\s+/)[0]),
    ).toEqual(['2026-03-01T00:00:00Z', '2026-03-02T00:00:00Z'])
    expect((await schedules(['delete', id])).stdout).toBe(`Deleted schedule ${id}.\n`)
    expect((await schedules(['list'])).stdout).toBe('No schedules.\n')
  })

  it('names each mistake and exits 1', async () => {
    const noCron = await schedules(['create', 'pipeline'])
    expect(noCron).toMatchObject({
      code: 1,
      stderr: expect.stringContaining("svc schedules create needs --cron, such as --cron '0 9 * * 1'"),
    })
    const unknown = await schedules(['pause', 'nope'])
    expect(unknown).toMatchObject({
      code: 1,
      stderr: expect.stringContaining('answered 404 SCHEDULE_NOT_FOUND: Schedule "nope" not found'),
    })
    const bad = await schedules(['create', 'pipeline', '--cron', 'daily'])
    expect(bad).toMatchObject({ code: 1, stderr: expect.stringContaining('400 INVALID_SCHEDULE') })
    const noChange = await schedules(['update', 'x'])
    expect(noChange).toMatchObject({ code: 1, stderr: expect.stringContaining('svc schedules update needs --cron, --timezone or --input') })
  })
})
