/**
 * Comments that send a reader somewhere send them somewhere: every
 * `README "…"` or `docs/….md "…"` cited in src/, targets/ and test/ names a
 * file that exists and a heading it has, and no comment leans on a source
 * it does not name, such as a numbered rule, a style guide or a
 * specification whose file is not in the repository (see _citations.ts for
 * the forms).
 */
import { describe, expect, it } from 'vitest'
import {
  citationProblem,
  citationsIn,
  citationsInText,
  commentsIn,
  sourceFiles,
  unnamedSourcesIn,
  unnamedSourcesInText,
} from './_citations.ts'

// test/docs/ is left out: its cases spell out, on purpose, citations that lead nowhere.
const files = sourceFiles(['src', 'targets', 'test']).filter((file) => !file.startsWith('test/docs/'))

describe('citations of the docs in source comments', () => {
  const citations = files.flatMap(citationsIn)

  it('finds the citations', () => {
    expect(citations.length).toBeGreaterThan(0)
  })

  it('cites only files and headings that exist', () => {
    expect(citations.map(citationProblem).filter(Boolean)).toEqual([])
  })

  it('reads a citation wrapped over comment lines, and matches a heading by its beginning', () => {
    const text = ['/**', ' * Slots are taken atomically (docs/flow-control.md', ' * "One rule on every', ' * store").', ' */'].join('\n')
    const [wrapped] = citationsInText('x.ts', text)
    expect(wrapped).toEqual({ file: 'x.ts', line: 2, doc: 'docs/flow-control.md', heading: 'One rule on every store' })
    expect(citationProblem(wrapped)).toBeUndefined()
    expect(citationProblem({ ...wrapped, heading: 'One rule' })).toBeUndefined()
    expect(citationProblem({ ...wrapped, heading: 'One rule on every sto' })).toMatch(/not a heading there/)
    expect(citationProblem({ ...wrapped, doc: 'docs/missing.md' })).toMatch(/does not exist/)
    expect(citationsInText('y.ts', '// see README "Quickstart"')).toEqual([
      { file: 'y.ts', line: 1, doc: 'README.md', heading: 'Quickstart' },
    ])
  })
})

describe('sources named in comments', () => {
  it('names only sources the repository holds', () => {
    expect(files.flatMap(unnamedSourcesIn)).toEqual([])
  })

  it('catches a numbered rule, STYLE and "the spec" in comments, wrapped or not, and nothing in strings', () => {
    const text = [
      '/**',
      ' * Keys are unique per invocation (rule',
      ' * 1), as STYLE says and the',
      ' * spec defines.',
      ' */',
      "const url = 'https://x.test/rule 2 of the spec' // see STYLE.md",
      'const BORDER_STYLE = `${url} // the spec`',
      'function f() {',
      '  // rule 3',
      '}',
    ].join('\n')
    expect(unnamedSourcesInText('x.ts', text).map((problem) => problem.slice(0, problem.indexOf(' names')))).toEqual([
      'x.ts:2: "rule 1"',
      'x.ts:3: "STYLE"',
      'x.ts:3: "the spec"',
      'x.ts:6: "STYLE.md"',
      'x.ts:9: "rule 3"',
    ])
    expect(commentsIn(text).map((comment) => comment.line)).toEqual([1, 6, 9])
  })

  it('accepts a numbered rule of a cited file that numbers it, and a standard named by its title', () => {
    expect(unnamedSourcesInText('x.ts', '// Steps run in order (docs/internals/engine.md, rule 1).')).toEqual([])
    expect(unnamedSourcesInText('x.ts', '// As the Standard Schema spec says.')).toEqual([])
    expect(unnamedSourcesInText('x.ts', '// Steps run in order (docs/internals/engine.md, rule 99).')).toHaveLength(1)
  })
})
