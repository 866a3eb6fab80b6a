/**
 * What a retained run weighs, for the memory store's `maxBytes` bound: the
 * JSON of its payloads (input, result, step outputs, token payloads) and
 * of attempt errors, each measured as the length of its text
 * (`jsonLength`), plus a fixed amount for each record's other fields. An
 * estimate of the memory a run holds, not an exact count; payloads the
 * engine checked against `maxPayloadBytes` are not serialized again.
 * Edge-safe.
 */
import type { Attempt, RunRecord, StepRecord } from '../../types.ts'
import { jsonLength } from '../base/json.ts'

/** A run's fields beside its payloads: ids, task, status, times (about 250 characters of JSON). */
const RUN_BASE = 256
/** An attempt's index, start time and duration. */
const ATTEMPT_BASE = 64
/** A step's status and kind, beside its key and output. */
const STEP_BASE = 48
/** A token's ids, step key, status and times, beside its payload. */
export const TOKEN_BASE = 192

/** The weight of `run` as given, attempts and steps included. */
export function runSize(run: Pick<RunRecord, 'input' | 'result' | 'attempts' | 'steps'>): number {
  let size = RUN_BASE + jsonLength(run.input) + jsonLength(run.result)
  for (const attempt of run.attempts) size += attemptSize(attempt)
  for (const key in run.steps) size += stepSize(key, run.steps[key])
  return size
}

export function attemptSize(attempt: Attempt): number {
  return ATTEMPT_BASE + (attempt.error?.length ?? 0)
}

export function stepSize(key: string, step: StepRecord): number {
  return STEP_BASE + key.length + jsonLength(step.output)
}
