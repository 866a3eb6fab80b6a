/**
 * Links between the docs lead somewhere: every relative link in README.md,
 * CONTRIBUTING.md, CHANGELOG.md, bench/README.md and docs/ names a file
 * that exists, and its `#anchor`, if any, a heading of that file.
 */
import { existsSync, statSync } from 'node:fs'
import { dirname, join, normalize } from 'node:path'
import { describe, expect, it } from 'vitest'
import { anchors, codeBlocks, docFiles, fromRoot, readDoc, ROOT } from './_markdown.ts'

/** The link targets of a Markdown text outside code, with their lines: `[text](target)` and `[label]: target`. */
function linksOf(text: string): { target: string; line: number }[] {
  const lines = text.split('\n')
  // Blank out fenced blocks so their contents are not read as links.
  for (const block of codeBlocks(text)) {
    const count = block.code === '' ? 0 : block.code.split('\n').length
    for (let i = 0; i < count; i++) lines[block.line - 1 + i] = ''
  }
  const out: { target: string; line: number }[] = []
  lines.forEach((raw, i) => {
    const line = raw.replace(/`[^`]*`/g, '')
    for (const match of line.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) out.push({ target: match[1], line: i + 1 })
    const reference = /^ {0,3}\[[^\]]+\]:\s*(\S+)/.exec(line)
    if (reference) out.push({ target: reference[1], line: i + 1 })
  })
  return out
}

describe('links in the docs', () => {
  const problems: string[] = []
  let count = 0
  for (const doc of docFiles()) {
    const text = readDoc(doc)
    for (const { target, line } of linksOf(text)) {
      if (/^[a-z][a-z+.-]*:/i.test(target)) continue
      count++
      const [path, anchor] = target.split('#') as [string, string | undefined]
      const file = path === '' ? join(ROOT, doc) : normalize(join(ROOT, dirname(doc), decodeURIComponent(path)))
      const where = `${doc}:${line}: ${target}`
      if (!existsSync(file)) {
        problems.push(`${where}: no such file`)
        continue
      }
      if (anchor !== undefined && statSync(file).isFile() && file.endsWith('.md') && !anchors(readDoc(fromRoot(file))).has(anchor)) {
        problems.push(`${where}: no heading with that anchor`)
      }
    }
  }

  it('finds the links', () => {
    expect(count).toBeGreaterThan(0)
  })

  it('every relative link names a file that exists, and a heading of it', () => {
    expect(problems).toEqual([])
  })
})
