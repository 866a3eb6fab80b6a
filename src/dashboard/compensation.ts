/** A run's compensation in its panel (docs/tasks.md "Compensation"): what is being undone, and how it ended. */
import type { RunCompensation } from '../runtime/types/runs.ts'
import { type Child, h } from './dom.ts'

export function compensationView(compensation: RunCompensation): Child {
  const after = compensation.reason === 'cancelled' ? 'after it was cancelled' : 'after it failed'
  const tries = compensation.failures === 0 ? '' : ` (${compensation.failures} failed ${compensation.failures === 1 ? 'try' : 'tries'})`
  const failed = compensation.failed
  return [
    h('h3', null, 'Compensation'),
    compensation.status === 'running'
      ? h('p', { class: 'compensation' }, `Undoing its completed steps ${after}, the last first${tries}.`)
      : compensation.status === 'completed'
        ? h('p', { class: 'compensation' }, `Every completed step was undone ${after}${tries}.`)
        : [
            h('p', { class: 'compensation' }, 'The undo of step ', h('code', null, failed?.step ?? '?'), ` kept failing${tries}:`),
            h('pre', { class: 'error' }, failed?.error ?? ''),
          ],
  ]
}
