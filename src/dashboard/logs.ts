/** The entries a run logged with `ctx.log`, oldest first, timed from the run's creation as its timeline is. */
import { type Child, dataTable, duration, h } from './dom.ts'
import type { Run } from './types.ts'

export function logsTable(run: Run): Child {
  const logs = run.logs
  if (!logs || logs.kept.length === 0) return h('p', { class: 'muted' }, 'Nothing logged.')
  const t0 = Date.parse(run.createdAt)
  return [
    logs.dropped
      ? h(
          'p',
          { class: 'muted' },
          `The first ${logs.dropped} entr${logs.dropped === 1 ? 'y was' : 'ies were'} dropped: a run keeps its last ones.`,
        )
      : null,
    dataTable(
      ['At', 'Attempt', 'Level', 'Step', 'Message'],
      logs.kept.map((entry) =>
        h(
          'tr',
          { 'data-seq': entry.seq },
          h('td', null, h('time', { datetime: entry.at, title: entry.at }, `+${duration(Date.parse(entry.at) - t0)}`)),
          h('td', null, String(entry.attempt)),
          h('td', null, h('span', { class: `level l-${entry.level}` }, entry.level)),
          h('td', null, entry.step ? h('code', null, entry.step) : h('span', { class: 'muted' }, '—')),
          h('td', null, entry.message, entry.attributes ? [' ', h('code', { class: 'muted' }, JSON.stringify(entry.attributes))] : null),
        ),
      ),
      { class: 'logs' },
    ),
  ]
}
