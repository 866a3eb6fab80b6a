// A waitpoint kind added to the `Waitpoint` type must not compile until every
// place that handles kinds handles it: the table of kinds
// (src/runtime/tasks/steps/waitpoint-kinds.ts) and each switch over them. This
// compiles svc's sources with one kind more in the type, as the next kind
// would be added, and expects an error in each of those places and nowhere
// else.
import { readFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import ts from 'typescript'
import { projectConfig } from '../_tsconfig.ts'
import { describe, expect, it } from 'vitest'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))
const RUNS = 'src/runtime/types/runs.ts'
const KINDS = 'src/runtime/tasks/steps/waitpoint-kinds.ts'

/** A text replaced in one source file, as the next kind would change it. */
type Edit = { file: string; find: string; replace: (found: string) => string }

/** A kind `update`, waited for by a step kind of its own. */
const UPDATE: Edit[] = [
  { file: RUNS, find: 'export type Waitpoint =\n', replace: (found) => `${found}  | { type: 'update'; channel: string }\n` },
  { file: RUNS, find: 'export type StepKind =\n', replace: (found) => `${found}  | 'waitForUpdate'\n` },
]
/** Its row in the table of kinds. */
const UPDATE_ROW: Edit = {
  file: KINDS,
  find: "  event: { step: 'waitForEvent', label: 'event' },\n",
  replace: (found) => `${found}  update: { step: 'waitForUpdate', label: 'update' },\n`,
}

/**
 * Compiles the sources under `roots` (all of src/ unless given, so that a
 * place this test does not know of shows up too) with `edits` made; resolves
 * to one `file: TScode message` per error.
 */
function compileWith(edits: Edit[], roots?: string[]): string[] {
  const edited = new Map<string, string>()
  for (const edit of edits) {
    const path = join(ROOT, edit.file)
    const text = edited.get(path) ?? readFileSync(path, 'utf8')
    if (!text.includes(edit.find)) throw new Error(`${edit.file} no longer holds ${JSON.stringify(edit.find)}; update this test`)
    edited.set(path, text.replace(edit.find, edit.replace))
  }
  const { options, fileNames } = projectConfig()
  const host = ts.createCompilerHost(options, true)
  const { getSourceFile, readFile } = host
  host.readFile = (file) => edited.get(file) ?? readFile.call(host, file)
  host.getSourceFile = (file, language, onError, create) => {
    const text = edited.get(file)
    return text === undefined ? getSourceFile.call(host, file, language, onError, create) : ts.createSourceFile(file, text, language, true)
  }
  const rootNames = roots?.map((file) => join(ROOT, file)) ?? fileNames.filter((file) => file.startsWith(join(ROOT, 'src/')))
  const program = ts.createProgram({ rootNames, options, host })
  return ts
    .getPreEmitDiagnostics(program)
    .map(
      (d) =>
        `${d.file ? relative(ROOT, d.file.fileName) : '(no file)'}: TS${d.code} ${ts.flattenDiagnosticMessageText(d.messageText, ' ')}`,
    )
}

const filesOf = (errors: string[]) => [...new Set(errors.map((error) => error.slice(0, error.indexOf(':'))))].sort()

describe('a waitpoint kind added to the type', () => {
  it('fails to compile until the table of kinds has its row', { timeout: 60_000 }, () => {
    const errors = compileWith(UPDATE, [KINDS])
    expect(errors.join('\n')).toMatch(/does not satisfy the expected type .*Property 'update' is missing/)
  })

  it('with its row, still fails to compile in each switch over the kinds, and nowhere else', { timeout: 60_000 }, () => {
    const errors = compileWith([...UPDATE, UPDATE_ROW])
    expect(filesOf(errors), errors.join('\n')).toEqual([
      'src/cli/runs-timeline.ts',
      'src/dashboard/run.ts',
      'src/dashboard/timeline.ts',
      'src/runtime/tasks/engine/wake.ts',
      'src/runtime/tasks/steps/waitpoints.ts',
      'src/testing/waiting.ts',
    ])
    for (const error of errors)
      expect(error).toMatch(
        /TS2345 Argument of type '\{ type: "update"; channel: string; \}' is not assignable to parameter of type 'never'/,
      )
  })

  it('with a name field, fails where the event-wait index would read its name as an event', { timeout: 60_000 }, () => {
    const named = { ...UPDATE[0], replace: (found: string) => `${found}  | { type: 'update'; name: string }\n` }
    const errors = compileWith([named, UPDATE[1], UPDATE_ROW], [KINDS])
    expect(errors.join('\n')).toMatch(/is not assignable to type '\{ namedKinds: "event" \| "update"; \}'/)
  })

  it('a step kind in neither list fails to compile', { timeout: 60_000 }, () => {
    const errors = compileWith([UPDATE[1]], [KINDS])
    expect(errors.join('\n')).toMatch(/is not assignable to type '\{ unlisted: "waitForUpdate"; \}'/)
  })
})
