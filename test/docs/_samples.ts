/**
 * Type-checks the TypeScript samples of the docs against the package's
 * sources, all in one TypeScript program.
 *
 * Each ```ts block becomes a module of its own, kept in memory under
 * `.tmp/doc-samples/` (so packages resolve from the repository's
 * node_modules) and compiled with the repository's tsconfig.json, whose
 * `paths` send `svcjs`, `svcjs/node`, `svcjs/postgres`, `svcjs/manifest` and the
 * target entries to their sources. A block whose info string is
 * `ts partial` is a fragment and is not compiled.
 */
import { join } from 'node:path'
import ts from 'typescript'
import { projectConfig } from '../_tsconfig.ts'
import { codeBlocks, readDoc, ROOT } from './_markdown.ts'

/** The info strings of a checked sample; `ts partial` marks a fragment. */
const CHECKED = new Set(['ts', 'typescript'])

export interface Sample {
  /** The Markdown file, from the root. */
  doc: string
  /** 1-based line in `doc` of the sample's first line of code. */
  line: number
  code: string
}

export interface SampleError {
  doc: string
  /** `doc:line:col: message`, pointing into the Markdown file. */
  text: string
}

/** The samples of `docs` that are checked: every ```ts or ```typescript block with nothing else in its info string. */
export function samplesOf(docs: readonly string[]): Sample[] {
  return docs.flatMap((doc) =>
    codeBlocks(readDoc(doc))
      .filter((block) => CHECKED.has(block.info))
      .map((block) => ({ doc, line: block.line, code: block.code })),
  )
}

/** Compiles every sample in one program and returns the errors, each placed in its Markdown file. */
export function checkSamples(samples: readonly Sample[]): SampleError[] {
  const { options } = projectConfig()

  const virtual = new Map<string, Sample>()
  samples.forEach((sample, i) => {
    const name = sample.doc.replace(/[^\w]+/g, '-')
    virtual.set(join(ROOT, '.tmp', 'doc-samples', `${name}-${sample.line}-${i}.ts`), sample)
  })

  const host = ts.createCompilerHost(options, true)
  const { fileExists, readFile, getSourceFile } = host
  host.fileExists = (file) => virtual.has(file) || fileExists.call(host, file)
  host.readFile = (file) => virtual.get(file)?.code ?? readFile.call(host, file)
  host.getSourceFile = (file, language, onError, create) => {
    const sample = virtual.get(file)
    if (sample) return ts.createSourceFile(file, sample.code, language, true, ts.ScriptKind.TS)
    return getSourceFile.call(host, file, language, onError, create)
  }

  const program = ts.createProgram({ rootNames: [...virtual.keys()], options, host })
  const errors: SampleError[] = []
  for (const [file, sample] of virtual) {
    const source = program.getSourceFile(file)
    if (!source) throw new Error(`${sample.doc}:${sample.line}: the sample was not compiled`)
    const diagnostics = [...program.getSyntacticDiagnostics(source), ...program.getSemanticDiagnostics(source)]
    for (const d of diagnostics) {
      const { line, character } = d.start === undefined ? { line: 0, character: 0 } : source.getLineAndCharacterOfPosition(d.start)
      const message = ts.flattenDiagnosticMessageText(d.messageText, '\n  ')
      errors.push({ doc: sample.doc, text: `${sample.doc}:${sample.line + line}:${character + 1}: TS${d.code}: ${message}` })
    }
  }
  return errors
}
