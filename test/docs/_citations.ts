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
import ts from 'typescript'
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

/** A comment of a source file: its text, as written, and the line it starts on. */
export interface Comment {
  line: number
  text: string
}

/** Every comment of `text`, a TypeScript source, found by TypeScript's parser, so that `//` in a string or a template is not one. */
export function commentsIn(text: string): Comment[] {
  const source = ts.createSourceFile('source.ts', text, ts.ScriptTarget.Latest, false, ts.ScriptKind.TS)
  const found = new Map<number, Comment>()
  const visit = (node: ts.Node): void => {
    // Each comment is trivia around some token: leading it (from the line after the one before), or
    // trailing the one before on its line. Those of every token are every comment.
    const ranges = [...(ts.getLeadingCommentRanges(text, node.pos) ?? []), ...(ts.getTrailingCommentRanges(text, node.end) ?? [])]
    for (const range of ranges) {
      if (!found.has(range.pos))
        found.set(range.pos, { line: source.getLineAndCharacterOfPosition(range.pos).line + 1, text: text.slice(range.pos, range.end) })
    }
    for (const child of node.getChildren(source)) {
      // A JSDoc node lies inside its comment: what precedes its parts is the comment's text, not trivia.
      if (child.kind < ts.SyntaxKind.FirstJSDocNode || child.kind > ts.SyntaxKind.LastJSDocNode) visit(child)
    }
  }
  visit(source)
  return [...found.values()].sort((a, b) => a.line - b.line)
}

/**
 * Names a comment may give a source without saying where it is, and what
 * must exist for each to name something. A numbered rule needs the
 * Markdown file that numbers it cited in the same comment, with an ordered
 * list item of that number; a style guide or a specification named
 * without its title needs a file of that name at the root or in docs/.
 */
const UNNAMED_SOURCES: { pattern: RegExp; exists(match: RegExpMatchArray, comment: Comment): boolean; missing: string }[] = [
  {
    pattern: /\brule[\s*/]+(\d+)\b/gi,
    exists: (match, comment) =>
      citationsInText('', comment.text).some((citation) => {
        const path = join(ROOT, citation.doc)
        return existsSync(path) && new RegExp(`^\\s*${match[1]}[.)]\\s`, 'm').test(readFileSync(path, 'utf8'))
      }),
    missing: 'no Markdown file cited beside it numbers its rules',
  },
  { pattern: /\bSTYLE\b(?:\.md)?/g, exists: () => rootDoc('STYLE.md'), missing: 'no STYLE.md at the root or in docs/' },
  { pattern: /\bthe[\s*/]+spec\b/gi, exists: () => rootDoc('SPEC.md'), missing: 'no SPEC.md at the root or in docs/' },
]

const rootDoc = (name: string): boolean => existsSync(join(ROOT, name)) || existsSync(join(ROOT, 'docs', name))

/** Where the comments of `text`, the source of `file`, name a source that is not in the repository. */
export function unnamedSourcesInText(file: string, text: string): string[] {
  const problems: string[] = []
  for (const comment of commentsIn(text)) {
    for (const { pattern, exists, missing } of UNNAMED_SOURCES) {
      for (const match of comment.text.matchAll(pattern)) {
        if (exists(match, comment)) continue
        const line = comment.line + (comment.text.slice(0, match.index).match(/\n/g)?.length ?? 0)
        const cited = match[0].replace(/[\s*/]+/g, ' ')
        problems.push(
          `${file}:${line}: "${cited}" names nothing in the repository (${missing}): say what it means, or cite a standard or docs/….md "Heading"`,
        )
      }
    }
  }
  return problems
}

/** The same, for one source file. */
export function unnamedSourcesIn(file: string): string[] {
  return unnamedSourcesInText(file, readFileSync(join(ROOT, file), 'utf8'))
}
