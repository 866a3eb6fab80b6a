/** `svc runtime advise [--json]`: where each route should run, and why. */
import { defineCommand } from '../_define.ts'
import { checkArgs, jsonArg, resolveRoot, rootArg } from '../_args.ts'
import { formatTable, printJson, printLines } from '../_output.ts'
import { scanValidApp } from '../_scan.ts'

const adviseArgs = { ...rootArg, ...jsonArg }

const advise = defineCommand({
  meta: { name: 'advise', description: 'Recommend a compute class and provider for every route, from its config and source' },
  args: adviseArgs,
  async run({ args, rawArgs }) {
    checkArgs(rawArgs, adviseArgs)
    const root = resolveRoot(args.root)
    const [result, { adviseRoutes }] = await Promise.all([scanValidApp(root), import('../../manifest/advisor.ts')])
    const advice = adviseRoutes(result.routes)

    if (args.json) {
      printJson({ advice })
      return
    }
    if (advice.length === 0) {
      printLines('stdout', [`No routes found under ${root}/src/api.`])
      return
    }
    const compute = (c: (typeof advice)[number]['current']) => [c.class, c.memory, c.cpu ? `${c.cpu}cpu` : null].filter(Boolean).join(' ')
    const lines = [
      formatTable(
        ['path', 'kind', 'current', 'recommended', 'provider', 'confidence', 'severity'],
        advice.map((a) => [a.path, a.kind, compute(a.current), compute(a.recommended), a.provider, a.confidence, a.severity]),
      ),
    ]
    // Warnings with their reasons and fix; other routes only when there is something to run next (tasks).
    for (const a of advice.filter((entry) => entry.severity === 'warn' || entry.nextCommand)) {
      lines.push('', `${a.severity} ${a.path} (${a.file})`)
      if (a.severity === 'warn') lines.push(...a.reasons.map((r) => `  - ${r}`))
      if (a.recommendation) lines.push(`  fix: ${a.recommendation}`)
      if (a.nextCommand) lines.push(`  then: ${a.nextCommand}`)
    }
    const warnings = advice.filter((a) => a.severity === 'warn').length
    lines.push('', `${advice.length} route${advice.length === 1 ? '' : 's'}, ${warnings} warning${warnings === 1 ? '' : 's'}`)
    printLines('stdout', lines)
  },
})

export default defineCommand({
  meta: { name: 'runtime', description: 'Advise on where routes run' },
  subCommands: { advise },
})
