/**
 * Parses one source file with oxc. Nothing is imported or evaluated: the
 * scanner reads the returned syntax tree only.
 */
import type { Node } from './ast.ts'

type Oxc = typeof import('oxc-parser')

// Loaded on the first parse, not with this module: a scan whose every file
// comes from the scan cache (scan-cache.ts) never loads the parser's native
// binding, which is most of a small command's start-up.
let oxc: Oxc | undefined

export type ParseOutcome = { ok: true; program: Node } | { ok: false; offset: number; message: string }

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

export async function parseSource(source: string, file: string, lang: 'ts' | 'js'): Promise<ParseOutcome> {
  oxc ??= await import('oxc-parser')
  const { parseSync } = oxc
  try {
    // astType 'js' leaves type annotations out of the tree: the scanner never reads them.
    const result = parseSync(file, source, {
      lang,
      sourceType: 'module',
      astType: 'js',
      preserveParens: false,
      ...(useRawTransfer() ? { experimentalRawTransfer: true } : {}),
    } as Parameters<typeof parseSync>[2])
    const error = result.errors.find((e) => e.severity === 'Error')
    if (error) {
      return { ok: false, offset: error.labels[0]?.start ?? 0, message: `syntax error: ${error.message}` }
    }
    return { ok: true, program: result.program as unknown as Node }
  } catch (error) {
    return { ok: false, offset: 0, message: `syntax error: ${(error as Error).message || 'the file could not be parsed'}` }
  }
}

function useRawTransfer(): boolean {
  if (++parsed <= RAW_TRANSFER_AFTER) return false
  rawTransfer ??= oxc!.rawTransferSupported()
  return rawTransfer
}
