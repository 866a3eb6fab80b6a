/** `svc dev [--port] [--host]`: serve the app in development mode and reload it on change. */
import { defineCommand } from '../_define.ts'
import { checkArgs, resolveRoot, rootArg } from '../_args.ts'
import { UsageError } from '../_errors.ts'
import { formatTable, printLines } from '../_output.ts'
import { TASKS_PREFIX } from '../../runtime/admin/tasks.ts'
import { taskNameFromPath } from '../../runtime/route-config.ts'
import { taskSecret } from '../../runtime/rules.ts'
import type { RuntimeApiRoute } from '../../types.ts'

const devArgs = {
  ...rootArg,
  port: { type: 'string', description: 'Port to listen on (0 picks a free one)', valueHint: 'number', default: '3000' },
  host: { type: 'string', description: 'Interface to bind', valueHint: 'host', default: 'localhost' },
} as const

export default defineCommand({
  meta: { name: 'dev', description: 'Serve the app in development mode, reloading routes on change' },
  args: devArgs,
  async run({ args, rawArgs }) {
    checkArgs(rawArgs, devArgs)
    const root = resolveRoot(args.root)
    const port = Number(args.port)
    if (!/^\d+$/.test(args.port) || port > 65535) throw new UsageError(`--port must be a whole number from 0 to 65535 (got "${args.port}")`)
    const [{ startDevServer }, { consola }, { listenFailure }] = await Promise.all([
      import('../../dev/server.ts'),
      import('consola'),
      import('../../node/listen.ts'),
    ])
    const dev = await startDevServer({ root, port, host: args.host, logger: consola }).catch((error: unknown) => {
      throw listenFailure(error, port, args.host, 'pick another one: svc dev --port <number> (--port 0 picks a free one)')
    })
    const { routes, pages } = dev.app
    const admin =
      taskSecret(process.env, () => {}) === undefined
        ? 'open to requests from this machine: no SVC_TASK_SECRET is set'
        : 'needs the task secret: send Authorization: Bearer $SVC_TASK_SECRET'
    printLines('stdout', [
      `svc dev: ${dev.url}`,
      '',
      formatTable(
        ['route', 'kind', 'methods', 'started by'],
        [
          // Task rows show the admin URL rather than their file's, so they follow the routes instead of sitting among them.
          ...routes.filter((route) => route.kind !== 'task').map(routeRow),
          ...routes.filter((route) => route.kind === 'task').map(routeRow),
          ...pages.map((page) => [page.path, `page (${page.mode ?? 'server'})`, 'GET', '']),
        ],
      ),
      '',
      `Task admin: ${dev.url}/__tasks (${admin}). Watching ${root}/src for changes.`,
      `Runs: ${dev.store} (SVC_STORE_URL picks another store).`,
      `Dashboard: ${dev.url}/__svc/dashboard`,
    ])
  },
})

/**
 * One row of the route table: where to send what. Task routes are not served
 * at their file's URL (it answers 404); a run starts with a POST to the task
 * admin surface, so that is the address shown.
 */
function routeRow(route: RuntimeApiRoute): string[] {
  if (route.kind === 'task') {
    return [`${TASKS_PREFIX}/${encodeURIComponent(route.name ?? taskNameFromPath(route.path))}`, 'task', 'POST', taskTriggers(route)]
  }
  const methods = [...(route.methods ?? []), ...(route.websocket ? ['WS'] : [])]
  return [route.path, route.kind ?? 'serverless', methods.join(',') || '-', '']
}

/** What starts a task's runs besides a POST or `enqueue`: its schedule and its events, else on demand only. */
function taskTriggers(route: RuntimeApiRoute): string {
  const triggers: string[] = []
  if (route.schedule) triggers.push(`cron ${route.schedule}${route.timezone && route.timezone !== 'UTC' ? ` (${route.timezone})` : ''}`)
  if (route.on?.length) triggers.push(`on ${route.on.join(', ')}`)
  return triggers.length ? triggers.join('; ') : 'on demand'
}
