import { parseAst } from 'rolldown/parseAst'
import { scanPageSource, scanRouteSource } from '../../src/manifest.ts'
import type { Node } from '../../src/manifest/ast.ts'
import { type LiteralProblem, readStaticLiteral } from '../../src/manifest/literal.ts'

/** Scans a route file's text; `file` is relative to the app root. */
export async function scanRoute(source: string, file = 'src/api/route.ts') {
  const { value, errors } = await scanRouteSource(file, source)
  return { route: value!, errors: errors.map(String), errorList: errors }
}

export async function scanPage(source: string, file = 'src/pages/page.ts') {
  const { value, errors } = await scanPageSource(file, source)
  return { page: value!, errors: errors.map(String) }
}

/** 1-based `line:column` of the first occurrence of `needle` in `source` (after `from`, if given). */
export function at(source: string, needle: string, from?: string): string {
  const start = from === undefined ? 0 : source.indexOf(from)
  const offset = source.indexOf(needle, start)
  if (offset === -1 || start === -1) throw new Error(`${needle} is not in the source`)
  const before = source.slice(0, offset).split('\n')
  return `${before.length}:${before[before.length - 1].length + 1}`
}

/** Reads the expression `expr` as a static literal. */
export function readLiteral(expr: string) {
  const source = `const value = ${expr}`
  const program = parseAst(source, { lang: 'ts', astType: 'js' }) as unknown as Node
  const problems: LiteralProblem[] = []
  const value = readStaticLiteral(program.body[0].declarations[0].init, 'value', source, problems)
  return { value: value.value, ok: value.ok, problems: problems.map((p) => ({ column: p.node.start + 1, message: p.message })) }
}
