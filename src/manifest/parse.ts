/**
 * Parses one source file with oxc. Nothing is imported or evaluated: the
 * scanner reads the syntax tree only, and keeps only the facts it reads.
 */
import type { Node } from './ast.ts'

type Oxc = typeof import('oxc-parser')

// Loaded on the first parse, not with this module: a scan whose every file
// comes from the scan cache (scan-cache.ts) never loads the parser's native
// binding, which is most of a small command's start-up.
let oxc: Oxc | undefined

export type ParseOutcome<T> = { ok: true; value: T } | { ok: false; offset: number; message: string }

/** Extensions the scanner reads, and the parser dialect for each. */
export const SOURCE_LANG: Record<string, 'ts' | 'js'> = { '.ts': 'ts', '.mts': 'ts', '.js': 'js', '.mjs': 'js' }

// Raw transfer hands the tree over in a shared buffer instead of a JSON
// string, which more than halves the cost of a large scan; where the platform
// lacks it, the JSON path gives the same tree. Its first use costs 20 ms or
// more (the buffer and the deserializer), more than a small app's whole scan,
// so the first files of a process take the JSON path.
const RAW_TRANSFER_AFTER = 32
let parsed = 0
let rawTransfer: boolean | undefined

/**
 * Parses `source` and hands its syntax tree to `read`, which returns the
 * facts it needs; the tree is released as soon as `read` returns, and must
 * not be kept.
 */
export async function readSource<T>(source: string, file: string, lang: 'ts' | 'js', read: (program: Node) => T): Promise<ParseOutcome<T>> {
  oxc ??= await import('oxc-parser')
  const { parseSync } = oxc
  let result: ReturnType<typeof parseSync>
  try {
    // astType 'js' leaves type annotations out of the tree: the scanner never reads them.
    result = parseSync(file, source, {
      lang,
      sourceType: 'module',
      astType: 'js',
      preserveParens: false,
      ...(useRawTransfer() ? { experimentalRawTransfer: true } : {}),
    } as Parameters<typeof parseSync>[2])
  } catch (error) {
    return { ok: false, offset: 0, message: `syntax error: ${(error as Error).message || 'the file could not be parsed'}` }
  }
  try {
    const error = result.errors.find((e) => e.severity === 'Error')
    if (error) return { ok: false, offset: error.labels[0]?.start ?? 0, message: `syntax error: ${error.message}` }
    return { ok: true, value: read(result.program as unknown as Node) }
  } finally {
    release(result)
  }
}

/**
 * Empties what a parse result holds. oxc-parser hands its result out
 * through getters whose closures hold the whole tree, and V8 keeps the pair
 * of accessors an object literal defines in the old generation: until the
 * next full collection, that dead pair keeps every tree it points to alive
 * through each young-generation collection, which then copies and promotes
 * them all. Cut loose, a file's tree dies young, as garbage should, and a
 * young-generation collection finds little alive to copy.
 */
function release(result: { program: unknown; comments: unknown[]; module: object }): void {
  const program = result.program as Node | null
  if (program) program.body = []
  result.comments.length = 0
  for (const value of Object.values(result.module)) if (Array.isArray(value)) value.length = 0
}

function useRawTransfer(): boolean {
  if (++parsed <= RAW_TRANSFER_AFTER) return false
  rawTransfer ??= oxc!.rawTransferSupported()
  return rawTransfer
}
