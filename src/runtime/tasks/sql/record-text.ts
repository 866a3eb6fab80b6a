/**
 * A run record's text in the SQL stores. The row in `runs` keeps
 * `"steps":{}`: each step is a row of the steps table (schema.ts,
 * STEPS_TABLE), so that a write of the run costs its own size however many
 * steps it has recorded, and saving a step costs the step's. Edge-safe.
 */
import type { RunRecord } from '../../../types.ts'
import { hasSteps, withoutSteps } from '../store/store.ts'

/** The text of a run's row in `runs`: the record with its steps left out. */
export function rowText(run: RunRecord): string {
  return JSON.stringify(withoutSteps(run))
}

/** The whole record's text, steps included; `row` is its `rowText`, which it is when there are none. */
export function wholeText(run: RunRecord, row: string): string {
  return hasSteps(run) ? JSON.stringify(run) : row
}
