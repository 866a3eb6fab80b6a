import { describe, expect, it } from 'vitest'
import { scanRoute } from './_helpers.ts'

const withSchedule = (schedule: string) => `export const route = { kind: 'task' }\nexport const schedule = ${JSON.stringify(schedule)}\nexport async function POST() {}\n`

// The manifest's schedule is what targets turn into platform cron triggers
// (wrangler triggers.crons, Vercel crons, schedules.json), and each fired
// cron is matched against task schedules with whitespace collapsed. Two
// spellings of one expression would become two triggers that both fire
// every task on it, so the manifest carries the single-spaced form the
// runtime uses.
describe('schedule whitespace in the manifest', () => {
  it('tabs, repeated and surrounding spaces collapse to single spaces', async () => {
    const { route, errors } = await scanRoute(withSchedule(' */5\t*  * * * '))
    expect(errors).toEqual([])
    expect(route.schedule).toBe('*/5 * * * *')
  })

  it('route.schedule and the schedule export that differ only in spacing do not conflict', async () => {
    const source = `export const route = { kind: 'task', schedule: '0 0 * * *' }\nexport const schedule = '0  0 * * *'\nexport async function POST() {}\n`
    const { route, errors } = await scanRoute(source)
    expect(errors).toEqual([])
    expect(route.warnings).toEqual([])
    expect(route.schedule).toBe('0 0 * * *')
  })
})
