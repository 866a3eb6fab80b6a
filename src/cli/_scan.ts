/**
 * The scan every app command starts with. It loads the scanner's entry
 * module rather than `svcjs/manifest`, whose other exports (the per-file
 * scanner, the parser, the advisor) a scan answered from the scan cache
 * never needs.
 */
import type { ScanResult } from '../manifest/types.ts'

/** Scans the app at `root`; throws a ManifestError with every config error it has. */
export async function scanValidApp(root: string): Promise<ScanResult> {
  const [{ scanApp }, { assertNoConfigErrors }] = await Promise.all([import('../manifest/scan.ts'), import('../manifest/errors.ts')])
  const result = await scanApp({ root })
  assertNoConfigErrors(result)
  return result
}
