/**
 * The subcommands of `svc`: each one's description, for the top-level
 * `svc --help`, and a loader for its module. Top-level help prints from this
 * table, so it loads no command module (nor what they import, such as the
 * task runtime `svc dev` needs); a command's own help loads that command.
 * test/cli keeps the descriptions equal to each module's own.
 */
import type { CommandDef } from 'citty'

interface CommandEntry {
  description: string
  load(): Promise<CommandDef>
}

export const COMMANDS: Record<string, CommandEntry> = {
  routes: {
    description: 'Inspect the routes of an app',
    load: () => import('./commands/routes.ts').then((m) => m.default as CommandDef),
  },
  runtime: {
    description: 'Advise on where routes run',
    load: () => import('./commands/runtime.ts').then((m) => m.default as CommandDef),
  },
  build: {
    description: 'Bundle the app for a deployment target',
    load: () => import('./commands/build.ts').then((m) => m.default as CommandDef),
  },
  tasks: {
    description: 'List, run and fire the app tasks',
    load: () => import('./commands/tasks.ts').then((m) => m.default as CommandDef),
  },
  runs: {
    description: 'Read and control the task runs of a running server',
    load: () => import('./commands/runs.ts').then((m) => m.default as CommandDef),
  },
  schedules: {
    description: 'Make, change and run the runtime schedules of a running server',
    load: () => import('./commands/schedules.ts').then((m) => m.default as CommandDef),
  },
  types: {
    description: 'Write .svc/types.d.ts: task names, inputs and results, and event names and data, as types',
    load: () => import('./commands/types.ts').then((m) => m.default as CommandDef),
  },
  dev: {
    description: 'Serve the app in development mode, reloading routes on change',
    load: () => import('./commands/dev.ts').then((m) => m.default as CommandDef),
  },
}

/** The subcommands as citty loads them: a module per command, when it runs. */
export function loaders(): Record<string, () => Promise<CommandDef>> {
  return Object.fromEntries(Object.entries(COMMANDS).map(([name, entry]) => [name, entry.load]))
}

/** The subcommands as the top-level usage shows them: name and description, nothing loaded. */
export function summaries(): Record<string, CommandDef> {
  return Object.fromEntries(Object.entries(COMMANDS).map(([name, { description }]) => [name, { meta: { name, description } }]))
}
