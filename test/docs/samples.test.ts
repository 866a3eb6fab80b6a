/**
 * The TypeScript samples in README.md and the docs compile against the
 * package as it is: a renamed option or export fails here, not in a
 * reader's editor. Every ```ts block is a module of its own; a fragment is
 * marked ```ts partial and skipped (CONTRIBUTING.md, "Samples in the docs").
 */
import { beforeAll, describe, expect, it } from 'vitest'
import { docFiles } from './_markdown.ts'
import { checkSamples, type SampleError, samplesOf } from './_samples.ts'

const docs = docFiles()
const samples = samplesOf(docs)
let errors: SampleError[] = []

beforeAll(() => {
  errors = checkSamples(samples)
}, 120_000)

describe('doc samples', () => {
  it('README.md and the docs hold samples to check', () => {
    expect(samples.filter((s) => s.doc === 'README.md').length).toBeGreaterThan(0)
    expect(samples.filter((s) => s.doc.startsWith('docs/')).length).toBeGreaterThan(0)
  })

  const withSamples = docs.filter((doc) => samples.some((s) => s.doc === doc))
  it.each(withSamples)('the ts samples of %s type-check against the sources', (doc) => {
    expect(errors.filter((e) => e.doc === doc).map((e) => e.text)).toEqual([])
  })
})
