/** `svc dev [--port] [--host]`: serve the app in development mode and reload it on change. */
import { defineCommand } from 'citty'
import { checkArgs, resolveRoot, rootArg } from '../_args.ts'
import { UsageError } from '../_errors.ts'
import { formatTable, printLines } from '../_output.ts'

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
    const [{ startDevServer }, { consola }] = await Promise.all([import('../../dev/server.ts'), import('consola')])
    const dev = await startDevServer({ root, port, host: args.host, logger: consola })
    const { routes, pages } = dev.app
    printLines('stdout', [
      `svc dev: ${dev.url}`,
      '',
      formatTable(
        ['route', 'kind', 'methods'],
        [
          ...routes.map((route) => [route.path, route.kind ?? 'serverless', [...(route.methods ?? []), ...(route.websocket ? ['WS'] : [])].join(',') || '-']),
          ...pages.map((page) => [page.path, `page (${page.mode ?? 'server'})`, 'GET']),
        ],
      ),
      '',
      `Task admin: ${dev.url}/__tasks (open to localhost in development). Watching ${root}/src for changes.`,
    ])
  },
})
