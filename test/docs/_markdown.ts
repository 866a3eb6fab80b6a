/**
 * Reading the project's Markdown the way GitHub renders it: which files are
 * docs, their fenced code blocks, their headings and the anchors GitHub
 * gives those headings.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'

export const ROOT = fileURLToPath(new URL('../..', import.meta.url))

/** README.md, CONTRIBUTING.md, CHANGELOG.md, bench/README.md and every Markdown file under docs/, as paths from the root. */
export function docFiles(): string[] {
  const files = ['README.md', 'CONTRIBUTING.md', 'CHANGELOG.md', 'bench/README.md'].filter((file) => existsSync(join(ROOT, file)))
  const walk = (dir: string): void => {
    for (const entry of readdirSync(join(ROOT, dir), { withFileTypes: true })) {
      const path = `${dir}/${entry.name}`
      if (entry.isDirectory()) walk(path)
      else if (entry.name.endsWith('.md')) files.push(path)
    }
  }
  if (existsSync(join(ROOT, 'docs'))) walk('docs')
  return files
}

export function readDoc(file: string): string {
  return readFileSync(join(ROOT, file), 'utf8')
}

export interface CodeBlock {
  /** The fence's info string, as written: `ts`, `ts partial`, `sh`… */
  info: string
  /** The first word of the info string: the language GitHub highlights. */
  lang: string
  code: string
  /** 1-based line of the block's first line of code in its file. */
  line: number
}

const FENCE = /^ {0,3}(`{3,}|~{3,})(.*)$/

/** The fenced code blocks of a Markdown text (CommonMark fences; indented code blocks are not read). */
export function codeBlocks(text: string): CodeBlock[] {
  const lines = text.split('\n')
  const blocks: CodeBlock[] = []
  for (let i = 0; i < lines.length; i++) {
    const open = FENCE.exec(lines[i])
    if (!open) continue
    const fence = open[1]
    const info = open[2].trim()
    const body: string[] = []
    let j = i + 1
    for (; j < lines.length; j++) {
      const close = FENCE.exec(lines[j])
      if (close && close[1][0] === fence[0] && close[1].length >= fence.length && close[2].trim() === '') break
      body.push(lines[j])
    }
    blocks.push({ info, lang: info.split(/\s+/)[0] ?? '', code: body.join('\n'), line: i + 2 })
    i = j
  }
  return blocks
}

/** The ATX headings (`#` to `######`) of a Markdown text, outside code blocks, as their text. */
export function headings(text: string): string[] {
  const out: string[] = []
  let fence: string | undefined
  for (const line of text.split('\n')) {
    const marker = FENCE.exec(line)
    if (marker) {
      if (fence === undefined) fence = marker[1]
      else if (marker[1][0] === fence[0] && marker[1].length >= fence.length && marker[2].trim() === '') fence = undefined
      continue
    }
    if (fence !== undefined) continue
    const heading = /^ {0,3}#{1,6}[ \t]+(.*?)[ \t#]*$/.exec(line)
    if (heading) out.push(heading[1])
  }
  return out
}

/** A heading's text as a reader sees it: no code ticks, bold or link syntax. */
export function plainHeading(heading: string): string {
  return heading
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/[`*]/g, '')
    .replace(/\s+/g, ' ')
    .trim()
}

/**
 * The anchors GitHub gives a file's headings, in order: lowercase, with
 * everything but letters, digits, spaces, `-` and `_` removed and spaces
 * turned into `-`; a repeated anchor gets `-1`, `-2`… appended.
 */
export function anchors(text: string): Set<string> {
  const seen = new Map<string, number>()
  const out = new Set<string>()
  for (const heading of headings(text)) {
    const base = heading
      .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-')
    const count = seen.get(base) ?? 0
    seen.set(base, count + 1)
    out.add(count === 0 ? base : `${base}-${count}`)
  }
  return out
}

/** `path` from the root, with `/` separators. */
export function fromRoot(path: string): string {
  return relative(ROOT, path).split('\\').join('/')
}
