/** `svc build [--target <name>]`: bundle the app for a deployment target, one of `TARGET_NAMES`. */
import { isTargetName, TARGET_NAMES } from '../../build/targets.ts'
import { defineCommand } from '../_define.ts'
import { checkArgs, resolveRoot, rootArg } from '../_args.ts'
import { UsageError } from '../_errors.ts'
import { formatTable, printLines } from '../_output.ts'

const buildArgs = {
  ...rootArg,
  target: {
    type: 'string',
    description: `Deployment target: ${TARGET_NAMES.join(', ')}`,
    valueHint: 'name',
    default: 'node',
  },
} as const

export default defineCommand({
  meta: { name: 'build', description: 'Bundle the app for a deployment target' },
  args: buildArgs,
  async run({ args, rawArgs }) {
    checkArgs(rawArgs, buildArgs)
    const root = resolveRoot(args.root)
    const target = args.target
    if (!isTargetName(target)) {
      throw new UsageError(`--target must be one of ${TARGET_NAMES.join(', ')} (got "${args.target}")`)
    }
    const { buildApp } = await import('../../build/build.ts')
    const started = performance.now()
    const result = await buildApp({ root, target })
    printLines('stderr', result.warnings)
    // Sizes are counted in units of 1024 bytes, which IEC 80000-13 names KiB.
    const kib = (bytes: number) => `${(bytes / 1024).toFixed(1)} KiB`
    printLines('stdout', [
      `Built ${target} in ${Math.round(performance.now() - started)} ms → ${result.outDir}`,
      formatTable(
        ['file', 'size', 'gzip'],
        result.files.map((file) => [file.path, kib(file.bytes), file.gzipBytes === undefined ? '-' : kib(file.gzipBytes)]),
      ),
    ])
  },
})
