/**
 * Parses one source file with oxc, through `rolldown/parseAst`. Nothing is
 * imported or evaluated: the scanner reads the returned syntax tree only.
 */
import { parseAstAsync } from 'rolldown/parseAst'
import type { Node } from './ast.ts'

export type ParseOutcome =
  | { ok: true; program: Node }
  | { ok: false; offset: number; message: string }

/** Extensions the scanner reads, and the parser dialect for each. */
export const SOURCE_LANG: Record<string, 'ts' | 'js'> = { '.ts': 'ts', '.mts': 'ts', '.js': 'js', '.mjs': 'js' }

/**
 * Parses off the main thread: oxc parses on a native worker thread while
 * this thread deserializes and analyzes the trees that are already done,
 * which matters when a scan parses a thousand files.
 */
export async function parseSource(source: string, file: string, lang: 'ts' | 'js'): Promise<ParseOutcome> {
  try {
    // astType 'js' leaves type annotations out of the tree: the scanner never
    // reads them, and the smaller tree is markedly quicker to deserialize.
    const program = (await parseAstAsync(source, { lang, sourceType: 'module', astType: 'js' }, file)) as unknown as Node
    return { ok: true, program }
  } catch (error) {
    const err = error as { pos?: number; message?: string }
    return { ok: false, offset: typeof err.pos === 'number' ? err.pos : 0, message: parseErrorMessage(err.message) }
  }
}

/** rolldown's message is "Parse failed with N errors:\n<first error>\n<code frame>"; keep the first error. */
function parseErrorMessage(message: string | undefined): string {
  const lines = (message ?? '').split('\n')
  const first = lines[0]?.startsWith('Parse failed') ? lines[1] : lines[0]
  return `syntax error: ${first?.trim() || 'the file could not be parsed'}`
}
