/** `svc routes inspect [--json]`: the manifest of an app's routes, read without running them. */
import { defineCommand } from '../_define.ts'
import { checkArgs, jsonArg, resolveRoot, rootArg } from '../_args.ts'
import { formatTable, printJson, printLines } from '../_output.ts'
import { scanValidApp } from '../_scan.ts'

const inspectArgs = { ...rootArg, ...jsonArg }

const inspect = defineCommand({
  meta: { name: 'inspect', description: 'List every route with its kind, compute, provider and reasons' },
  args: inspectArgs,
  async run({ args, rawArgs }) {
    checkArgs(rawArgs, inspectArgs)
    const root = resolveRoot(args.root)
    const result = await scanValidApp(root)

    if (args.json) {
      printJson({ routes: result.routes, pages: result.pages })
      return
    }
    if (result.routes.length === 0 && result.pages.length === 0) {
      printLines('stdout', [`No routes found under ${root}/src/api or pages under ${root}/src/pages.`])
      return
    }
    // Loaded for the table only: `--json` has no use for it.
    const { describeFlow } = await import('../../runtime/tasks/flow/flow.ts')
    const lines: string[] = []
    if (result.routes.length > 0) {
      lines.push(
        formatTable(
          ['path', 'kind', 'name', 'methods', 'schedule', 'on', 'flow', 'compute', 'provider', 'confidence'],
          result.routes.map((r) => [
            r.path,
            r.kind,
            r.name ?? '-',
            [...r.methods, ...(r.websocket ? ['WS'] : [])].join(',') || '-',
            r.schedule ?? '-',
            r.on?.join(',') ?? '-',
            describeFlow(r.flow),
            [r.compute.class, r.compute.memory, r.compute.cpu ? `${r.compute.cpu}cpu` : null].filter(Boolean).join(' '),
            r.provider,
            r.confidence,
          ]),
        ),
      )
    }
    if (result.pages.length > 0) {
      if (lines.length > 0) lines.push('')
      lines.push(
        formatTable(
          ['page', 'mode', 'revalidate', 'tags'],
          result.pages.map((p) => [p.path, p.mode, p.revalidate === null ? '-' : `${p.revalidate}s`, p.tags.join(',') || '-']),
        ),
      )
    }
    printLines('stdout', lines)
    printLines(
      'stderr',
      result.routes.flatMap((r) => r.warnings.map((w) => `${r.file}: warning: ${w}`)),
    )
  },
})

export default defineCommand({
  meta: { name: 'routes', description: 'Inspect the routes of an app' },
  subCommands: { inspect },
})
