/**
 * svc imports one way, from the runtime up to the targets
 * (docs/internals/architecture.md "Layers"). The rules are
 * .dependency-cruiser.mjs; this runs them over src/ and targets/, and over a
 * small tree that breaks each of them once, so that a rule that matches no
 * file cannot pass unnoticed.
 */
import { fileURLToPath } from 'node:url'
import { cruise, type ICruiseOptions, type IViolation } from 'dependency-cruiser'
import extractDepcruiseOptions from 'dependency-cruiser/config-utl/extract-depcruise-options'
import extractTSConfig from 'dependency-cruiser/config-utl/extract-ts-config'
import { describe, expect, it } from 'vitest'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
const FIXTURE = fileURLToPath(new URL('fixtures/layers', import.meta.url))

/**
 * One line per violation: the rule, then the import or the whole cycle. A
 * cycle with a type-only import in it says so: it is there for the type
 * checker alone, and breaks at that import.
 */
function describeViolation(violation: IViolation): string {
  const cycle = violation.cycle ?? []
  const path = cycle.length ? [violation.from, ...cycle.map((step) => step.name)] : [violation.from, violation.to]
  const typesOnly = cycle.some((step) => step.dependencyTypes.includes('type-only'))
  return `${violation.rule.name}: ${path.join(' → ')}${typesOnly ? ' (types only)' : ''}`
}

async function violations(files: string[], options: ICruiseOptions, tsConfig?: string): Promise<string[]> {
  const { output } = await cruise(files, options, {}, { tsConfig: tsConfig ? extractTSConfig(tsConfig) : undefined })
  if (typeof output === 'string') throw new TypeError(`dependency-cruiser answered text, not a cruise result: ${output}`)
  return output.summary.violations.map(describeViolation).sort()
}

const options = await extractDepcruiseOptions(`${ROOT}/.dependency-cruiser.mjs`)

describe('layers', () => {
  it('src/ and targets/ import only along the layers, with no cycle', async () => {
    const found = await violations(['src', 'targets'], { ...options, baseDir: ROOT }, `${ROOT}/tsconfig.json`)
    expect(found).toEqual([])
  })

  it('each rule catches what it forbids', async () => {
    const { tsConfig: _tsConfig, ...rest } = options
    const found = await violations(['src', 'targets'], { ...rest, baseDir: FIXTURE })
    expect(found).toEqual([
      'edge-no-node-builtins: src/runtime/reads-file.ts → fs',
      'layer-build: src/build/other.ts → targets/x/build.ts',
      'layer-cloudflare: src/cloudflare/worker.ts → src/manifest/scan.ts',
      'layer-node: src/node/server.ts → src/dev/reload.ts',
      'layer-runtime: src/runtime/scans.ts → src/manifest/scan.ts',
      'no-circular-folders: src/runtime/app → src/runtime/pages → src/runtime/app',
      'no-circular-folders: src/runtime/pages → src/runtime/app → src/runtime/pages',
      'no-circular: src/cli/a.ts → src/cli/b.ts → src/cli/a.ts',
      'not-in-a-layer: src/misc/helper.ts → src/manifest/scan.ts',
      'target-is-one-folder: targets/y/build.ts → targets/x/build.ts',
      'targets-through-import-map: targets/x/runtime.ts → src/dev/reload.ts',
    ])
  })
})
