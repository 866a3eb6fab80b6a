/**
 * How source comments cite the docs, and whether what they cite is there.
 *
 * A citation names a Markdown file, `README` or a path under `docs/`,
 * optionally followed by a heading in double quotes:
 *
 *   (docs/stores.md "Choosing a store without code")
 *   (README "Quickstart")
 *
 * A comment may wrap between the file and the heading, or inside the
 * heading. The heading matches a heading of that file when it is the
 * heading's text (without code ticks) or its beginning, up to a word
 * boundary: "Flow control" cites "Flow control: concurrency, rate limits".
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { headings, plainHeading, ROOT } from './_markdown.ts'

export interface Citation {
  /** The source file, from the root, and the line the citation starts on. */
  file: string
  line: number
  /** The Markdown file cited, from the root. */
  doc: string
  heading?: string
}

const CITATION = /\b(README(?:\.md)?|docs\/[\w./-]*\w\.md)(?:\s*,?\s*"([^"]+)")?/g
// A comment line's continuation: the newline, indentation and `*` or `//` of the next line.
const CONTINUATION = /\n[ \t]*(?:\*(?!\/)|\/\/)?[ \t]*/g

/** Every `.ts` file under `dirs`, from the root. */
export function sourceFiles(dirs: readonly string[]): string[] {
  const files: string[] = []
  const walk = (dir: string): void => {
    for (const entry of readdirSync(join(ROOT, dir), { withFileTypes: true })) {
      const path = `${dir}/${entry.name}`
      if (entry.isDirectory()) {
        if (entry.name !== 'node_modules' && entry.name !== 'fixtures') walk(path)
      } else if (/\.m?ts$/.test(entry.name)) files.push(path)
    }
  }
  for (const dir of dirs) walk(dir)
  return files
}

/** The citations in one source file. */
export function citationsIn(file: string): Citation[] {
  return citationsInText(file, readFileSync(join(ROOT, file), 'utf8'))
}

/** The citations in `text`, the source of `file`. */
export function citationsInText(file: string, text: string): Citation[] {
  // Join wrapped comment lines, keeping a map from each joined offset back to its line.
  const lineOf: number[] = []
  let joined = ''
  let last = 0
  let line = 1
  for (const match of text.matchAll(CONTINUATION)) {
    const piece = text.slice(last, match.index)
    joined += piece
    for (let i = 0; i < piece.length; i++) lineOf.push(line)
    joined += ' '
    lineOf.push(line)
    line++
    last = match.index + match[0].length
  }
  const rest = text.slice(last)
  joined += rest
  for (let i = 0; i < rest.length; i++) lineOf.push(line)

  const out: Citation[] = []
  for (const match of joined.matchAll(CITATION)) {
    const doc = match[1].startsWith('README') ? 'README.md' : match[1]
    out.push({ file, line: lineOf[match.index], doc, heading: match[2]?.replace(/\s+/g, ' ').trim() })
  }
  return out
}

const headingsOf = new Map<string, string[]>()

/** Why a citation points nowhere, or `undefined` when it points to a file, and a heading of it, that exist. */
export function citationProblem(citation: Citation): string | undefined {
  const where = `${citation.file}:${citation.line}`
  if (!existsSync(join(ROOT, citation.doc))) return `${where}: cites ${citation.doc}, which does not exist`
  if (citation.heading === undefined) return undefined
  let known = headingsOf.get(citation.doc)
  if (!known) {
    known = headings(readFileSync(join(ROOT, citation.doc), 'utf8')).map((h) => plainHeading(h).toLowerCase())
    headingsOf.set(citation.doc, known)
  }
  const cited = plainHeading(citation.heading).toLowerCase()
  const found = known.some((h) => h === cited || (h.startsWith(cited) && !/[\p{L}\p{N}]/u.test(h[cited.length])))
  return found ? undefined : `${where}: cites ${citation.doc} "${citation.heading}", which is not a heading there`
}
