/**
 * Comments that send a reader to the docs send them somewhere: every
 * `README "…"` or `docs/….md "…"` cited in src/ and targets/ names a file
 * that exists and a heading it has (see _citations.ts for the forms).
 */
import { describe, expect, it } from 'vitest'
import { citationProblem, citationsIn, citationsInText, sourceFiles } from './_citations.ts'

describe('citations of the docs in source comments', () => {
  const citations = sourceFiles(['src', 'targets']).flatMap(citationsIn)

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
