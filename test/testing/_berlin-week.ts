/**
 * A schedule read across a change of daylight saving time: `0 9 * * *` in
 * Europe/Berlin from noon UTC on 25 March 2026 for seven days. Berlin moves
 * its clocks forward on Sunday 29 March, so 09:00 is 08:00 UTC before and
 * 07:00 UTC after.
 */
export const BERLIN_WEEK = {
  cron: '0 9 * * *',
  timezone: 'Europe/Berlin',
  start: '2026-03-25T12:00:00Z',
  ticks: [
    '2026-03-26T08:00:00.000Z',
    '2026-03-27T08:00:00.000Z',
    '2026-03-28T08:00:00.000Z',
    '2026-03-29T07:00:00.000Z',
    '2026-03-30T07:00:00.000Z',
    '2026-03-31T07:00:00.000Z',
    '2026-04-01T07:00:00.000Z',
  ],
}
