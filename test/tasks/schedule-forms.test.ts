import { describe, expect, it } from 'vitest'
import { createTaskRuntime } from '../../src/runtime/tasks/index.ts'
import { scanRouteSource } from '../../src/manifest.ts'
import { task } from './_helpers.ts'

const define = (schedule: string) => () => createTaskRuntime({ routes: [task('tick', () => 1, { schedule })], env: {} })

// Spec "Route configuration": schedule is a standard five-field cron
// expression. croner also reads nicknames such as @daily; the scanner
// refuses them, and a hand-written route given to the runtime must be held
// to the same rule, or one app schedules differently depending on how its
// routes were loaded.
describe('schedule forms the runtime accepts', () => {
  it.each(['@daily', '@hourly', '@weekly', '@monthly', '@reboot'])('%s is refused as not five fields, as the scanner does', async (schedule) => {
    const message = `schedule "${schedule}" must be a five-field cron expression (minute hour day-of-month month day-of-week), got 1 field`
    expect(define(schedule)).toThrow(`Task "tick" (/api/tick): ${message}`)
    const scanned = await scanRouteSource('src/api/tick.ts', `export const route = { kind: 'task' }\nexport const schedule = '${schedule}'\nexport async function POST() {}\n`)
    expect(scanned.errors.map((e) => e.message)).toEqual([message])
  })

  it('five fields with extra whitespace are accepted and normalized', async () => {
    const rt = define(' 0\t0  * * 1 ')()
    expect(rt.tasks.get('tick')?.schedule).toBe('0 0 * * 1')
    await rt.close()
  })

  it('a schedule that never fires is refused, as the scanner does', async () => {
    const message = 'schedule "0 0 31 2 *" never fires: no date matches it'
    expect(define('0 0 31 2 *')).toThrow(`Task "tick" (/api/tick): ${message}`)
    const scanned = await scanRouteSource('src/api/tick.ts', `export const route = { kind: 'task' }\nexport const schedule = '0 0 31 2 *'\nexport async function POST() {}\n`)
    expect(scanned.errors.map((e) => e.message)).toEqual([message])
  })
})
