/** `svc types`: writes `.svc/types.d.ts`, the app's tasks and events as types for enqueue(), sendEvent() and ctx.step. */
import { relative } from 'node:path'
import { defineCommand } from '../_define.ts'
import { checkArgs, resolveRoot, rootArg } from '../_args.ts'
import { printLines } from '../_output.ts'
import { scanValidApp } from '../_scan.ts'

const typesArgs = { ...rootArg } as const

export default defineCommand({
  meta: { name: 'types', description: 'Write .svc/types.d.ts: task names, inputs and results, and event names and data, as types' },
  args: typesArgs,
  async run({ args, rawArgs }) {
    checkArgs(rawArgs, typesArgs)
    const root = resolveRoot(args.root)
    const [scan, { writeTaskTypes }] = await Promise.all([scanValidApp(root), import('../../manifest/task-types.ts')])
    const { path, written, tasks } = writeTaskTypes(root, scan.routes, scan.events)
    const where = relative(process.cwd(), path) || path
    const events = scan.events?.names.length ?? 0
    const counted = `${tasks} task${tasks === 1 ? '' : 's'}${events > 0 ? `, ${events} event${events === 1 ? '' : 's'}` : ''}`
    printLines('stdout', [`${written ? 'Wrote' : 'Up to date:'} ${where} (${counted})`])
  },
})
