/**
 * Replay from a step (`TaskRuntime.replay(id, { fromStep })`): the steps a
 * run recorded before `fromStep`, in the order it recorded them, which the
 * new run starts with, so they return their outputs and do not run again.
 * Edge-safe.
 */
import type { ReplayOptions, RunRecord } from '../../types.ts'
import { describe } from '../../describe.ts'
import { StepNotRecordedError } from '../../errors.ts'

/** `options`, checked: a `fromStep` that is a non-empty string, if any. */
export function checkReplayOptions(options: ReplayOptions | undefined): ReplayOptions {
  if (options === undefined) return {}
  if (options === null || typeof options !== 'object') {
    throw new TypeError(`replay(id, options): options must be an object such as { fromStep: 'send-email' } (got ${describe(options)})`)
  }
  const problem = fromStepProblem(options.fromStep)
  if (problem) throw new TypeError(`replay(id, { fromStep }): ${problem}`)
  return options
}

/** Why `fromStep` cannot name a step to replay from (absent, or a non-empty string, can), or null. */
export function fromStepProblem(fromStep: unknown): string | null {
  if (fromStep === undefined || (typeof fromStep === 'string' && fromStep !== '')) return null
  return `fromStep must be the key of a step the run recorded (got ${describe(fromStep)})`
}

/**
 * The steps `source` recorded before `fromStep`, as recorded. `fromStep` is
 * a step it recorded, or the step whose function threw the error its last
 * attempt failed with (never recorded: every recorded step is kept); any
 * other key is refused.
 */
export function stepsBefore(source: RunRecord, fromStep: string): RunRecord['steps'] {
  const keys = Object.keys(source.steps)
  const failedAt = source.attempts.at(-1)?.step
  const at = keys.includes(fromStep) ? keys.indexOf(fromStep) : fromStep === failedAt ? keys.length : -1
  if (at === -1) throw new StepNotRecordedError(source.id, fromStep, failedAt === undefined ? keys : [...keys, failedAt])
  const kept: RunRecord['steps'] = {}
  for (const key of keys.slice(0, at)) kept[key] = source.steps[key]
  return kept
}
