/**
 * What every store and the engine do the same with an update
 * (types/updates.ts): the bound on the updates a run holds unanswered, an
 * update as a put keeps it and as its answer leaves it, and an update as
 * the SQL stores' columns. Edge-safe.
 */
import type { UpdateAnswer, UpdateRecord, UpdateStatus } from '../../types/updates.ts'

/** The most updates a run holds that it has not answered; an update past it is refused (429). */
export const MAX_PENDING_UPDATES = 100

/** `update` as a store keeps it when put: `pending`, with no answer, and nothing but an update's fields. */
export function pendingUpdate(update: UpdateRecord): UpdateRecord {
  const kept: UpdateRecord = { id: update.id, runId: update.runId, name: update.name, sentAt: update.sentAt, status: 'pending' }
  if (update.data !== undefined) kept.data = update.data
  return kept
}

/**
 * `update` with `answer` given: its status, the answer's time, and its
 * result or error where the answer has them (a field the answer lacks
 * stays absent). A new object; `update` is left as it is.
 */
export function answeredUpdate(update: UpdateRecord, answer: UpdateAnswer): UpdateRecord {
  const answered: UpdateRecord = { ...update, status: answer.status, answeredAt: answer.answeredAt }
  if (answer.result !== undefined) answered.result = answer.result
  if (answer.error !== undefined) answered.error = answer.error
  return answered
}

/**
 * An update as the SQL stores read it back: the columns `run_id`, `id`,
 * `name`, `sent_at` and `status`, with `data` and `answer` (the answer's
 * `result`, `error` and `answeredAt`) as JSON text, NULL while absent.
 * What a NULL column stands for stays absent.
 */
export function updateFromColumns(row: Record<string, unknown>): UpdateRecord {
  const update: UpdateRecord = {
    id: String(row.id),
    runId: String(row.run_id),
    name: String(row.name),
    sentAt: String(row.sent_at),
    status: String(row.status) as UpdateStatus,
  }
  if (row.data !== null && row.data !== undefined) update.data = JSON.parse(String(row.data))
  if (row.answer === null || row.answer === undefined) return update
  const answer = JSON.parse(String(row.answer)) as Omit<UpdateAnswer, 'status'>
  if (answer.result !== undefined) update.result = answer.result
  if (answer.error !== undefined) update.error = answer.error
  update.answeredAt = answer.answeredAt
  return update
}

/** The `answer` column of an update answered with `answer`, as `updateFromColumns` reads it. */
export function answerColumn(answer: Pick<UpdateRecord, 'result' | 'error' | 'answeredAt'>): string {
  return JSON.stringify({ result: answer.result, error: answer.error, answeredAt: answer.answeredAt })
}

/** `value` as a JSON column: NULL for what JSON leaves out (`undefined`). */
export function jsonColumn(value: unknown): string | null {
  return JSON.stringify(value) ?? null
}
