/** The shapes the page reads from the admin surface. */
import type { RunRecord } from '../runtime/types.ts'
export type { DashboardTask } from '../runtime/dashboard/tasks.ts'
/** One event of `GET /__events`: its data is read when the user opens it (`GET /__events/<id>`). */
export type { EventSummary as EventRow } from '../runtime/admin/event-summary.ts'

/** One row of `GET /__tasks/runs`. */
export interface RunRow {
  id: string
  taskName: string
  status: string
  trigger: string
  createdAt: string
  startedAt?: string
  finishedAt?: string
  attempts: number
  ok: boolean
  version?: string
  tags?: string[]
}

export type Run = Omit<RunRecord, 'status' | 'trigger'> & { status: string; trigger: string; replayOf?: string }

/** Statuses after which a run changes no more. */
export const FINISHED = new Set(['completed', 'failed', 'cancelled', 'compensation_failed'])

export const STATUSES = ['scheduled', 'queued', 'running', 'suspended', 'completed', 'failed', 'cancelled', 'compensation_failed']
