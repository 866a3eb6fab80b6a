// The kinds of step and of waitpoint are closed sets, each in one table
// (src/runtime/tasks/steps/waitpoint-kinds.ts): the docs' step table names the
// same kinds, and each wait's step kind leads back to its waitpoint kind.
import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import {
  PLAIN_STEP_KINDS,
  STEP_KINDS,
  unknownWaitpoint,
  unknownWaitpointType,
  WAITPOINT_KINDS,
  WAITPOINT_TYPES,
  waitpointTypeOfStep,
} from '../../src/runtime/tasks/steps/waitpoint-kinds.ts'

/** The rows of the table under docs/tasks.md "Durable steps": each step's kind, and the waitpoint it waits on. */
function documentedSteps(): { kind: string; waitpoint?: string }[] {
  const doc = readFileSync(new URL('../../docs/tasks.md', import.meta.url), 'utf8')
  const section = doc.slice(doc.indexOf('\n## Durable steps\n'))
  const table = section.slice(section.indexOf('\n| Step |')).split('\n\n')[0].trim().split('\n').slice(2)
  return table.map((row) => {
    const cell = row.split(' | ')[1]
    const match = /^`(\w+)`(?:, on an? `(\w+)` waitpoint)?$/.exec(cell)
    if (!match)
      throw new Error(`docs/tasks.md: a row of the step table whose kind cell does not read "\`kind\`[, on a \`type\` waitpoint]": ${row}`)
    return match[2] === undefined ? { kind: match[1] } : { kind: match[1], waitpoint: match[2] }
  })
}

describe('step kinds', () => {
  it("the docs' step table names every step kind but patch and compensation, which the lines after it name, and no other", () => {
    const documented = new Set(documentedSteps().map((row) => row.kind))
    expect([...documented, 'patch', 'compensation'].sort()).toEqual([...STEP_KINDS].sort())
    const doc = readFileSync(new URL('../../docs/tasks.md', import.meta.url), 'utf8')
    expect(doc).toContain('record their answer as a step too, of kind `patch`')
    expect(doc).toContain('is recorded as a step of kind `compensation`')
  })

  it("the docs' step table names every waitpoint kind, each with the step kind the table of kinds records", () => {
    const waits = documentedSteps().filter((row) => row.waitpoint !== undefined)
    expect(new Set(waits.map((row) => row.waitpoint))).toEqual(new Set(WAITPOINT_TYPES))
    for (const row of waits) expect(WAITPOINT_KINDS[row.waitpoint as keyof typeof WAITPOINT_KINDS].step).toBe(row.kind)
    for (const row of documentedSteps()) if (row.waitpoint === undefined) expect(PLAIN_STEP_KINDS).toContain(row.kind)
  })

  it("a wait's step kind leads back to its waitpoint kind, and a step that waited for nothing to none", () => {
    for (const type of WAITPOINT_TYPES) expect(waitpointTypeOfStep(WAITPOINT_KINDS[type].step)).toBe(type)
    for (const kind of PLAIN_STEP_KINDS) expect(waitpointTypeOfStep(kind)).toBeUndefined()
    expect(waitpointTypeOfStep(undefined)).toBeUndefined()
  })

  it('a waitpoint of a kind this release does not know fails the engine, naming it, and is shown by its type', () => {
    const later = { type: 'update', channel: 'c' } as never
    expect(() => unknownWaitpoint(later)).toThrow(
      new TypeError('Unknown waitpoint kind (got "update"); is this record from a later release of svc?'),
    )
    expect(unknownWaitpointType(later)).toBe('update')
  })
})
