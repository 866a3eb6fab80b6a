#!/usr/bin/env node
/**
 * The `svc` command line. Subcommands load lazily, one file each under
 * `commands/`, so `svc routes inspect` never loads what `svc dev` needs,
 * and `svc --help` loads none of them. Commands throw; only this file
 * prints errors and sets the exit code.
 */
import type { CommandDef } from 'citty'

// From process.getBuiltinModule() rather than `import`, whose module facade
// reads every export of node:module (see bin/svc.mjs).
const { enableCompileCache } = process.getBuiltinModule('node:module')

// Node's compile cache keeps compiled (and, from source, type-stripped)
// modules between runs; it takes most of the start-up time off every
// command after the first. Everything else is imported after it is on.
// bin/svc.mjs turns it on earlier still, before this file is stripped.
enableCompileCache?.()

// Commands that scan the app (routes, runtime, tasks, types, build, dev)
// reuse the results of unchanged files from `.svc/scan-cache.json`;
// SVC_SCAN_CACHE=0 turns that off. A library caller of `scanApp` opts in.
process.env.SVC_SCAN_CACHE ??= '1'

const { importCitty } = await import('./_citty.ts')
const { runCommand, renderUsage } = await importCitty()
const { ExitCode, isUsageError } = await import('./_errors.ts')
const { loaders, summaries } = await import('./_commands.ts')
const { hasOpenResources, printLines, stdio } = await import('./_output.ts')

const meta = async () => ({
  name: 'svc',
  version: await version(),
  description: 'File-based API routes, background tasks and compute classes',
})
const svc: CommandDef = { meta, subCommands: loaders() }
// The same command for top-level usage, which lists the subcommands without loading them.
const svcUsage: CommandDef = { meta, subCommands: summaries() }

async function version(): Promise<string> {
  const { default: pkg } = await import('../../package.json', { with: { type: 'json' } })
  return pkg.version
}

/** Runs the CLI and resolves with the exit code. */
async function main(rawArgs: string[]): Promise<number> {
  try {
    if (rawArgs.some((arg) => arg === '--help' || arg === '-h')) {
      const [cmd, parent] = await resolveCommand(svc, rawArgs)
      // As citty's showUsage() prints it (a blank line after), without the
      // process.stdout its console.log would make for this one write.
      printLines('stdout', [await renderUsage(cmd === svc ? svcUsage : cmd, parent), ''])
      return 0
    }
    if (rawArgs.length === 1 && (rawArgs[0] === '--version' || rawArgs[0] === '-v')) {
      printLines('stdout', [await version()])
      return 0
    }
    await runCommand(svc, { rawArgs })
    return 0
  } catch (error) {
    if (error instanceof ExitCode) return error.code
    // Only a command that scanned the app can throw a ManifestError, and it
    // has loaded the module already; other commands never pay for it.
    const { ManifestError } = await import('../manifest/errors.ts')
    if (error instanceof ManifestError) {
      const lines = error.errors.map(String)
      lines.push(`${error.errors.length} config error${error.errors.length === 1 ? '' : 's'}`)
      printLines('stderr', lines)
    } else if (isUsageError(error)) {
      // Usage goes to stderr with the error, so stdout stays clean for pipes.
      const [cmd, parent] = await resolveCommand(svc, rawArgs)
      printLines('stderr', [await renderUsage(cmd === svc ? svcUsage : cmd, parent), '', `error: ${stripAnsi(error.message)}`])
    } else {
      const message = error instanceof Error ? error.message : String(error)
      // The message only: a stack trace is noise for a user's mistake; SVC_DEBUG=1 shows it.
      const { consola } = await import('consola')
      consola.error(message)
      if (process.env.SVC_DEBUG && error instanceof Error && error.stack) stdio('stderr').write(`${error.stack}\n`)
    }
    return 1
  }
}

/** The deepest subcommand named in `rawArgs`, and its parent, for usage output. */
async function resolveCommand(cmd: CommandDef, rawArgs: string[], parent?: CommandDef): Promise<[CommandDef, CommandDef | undefined]> {
  const subCommands = typeof cmd.subCommands === 'function' ? await cmd.subCommands() : await cmd.subCommands
  const name = rawArgs.find((arg) => !arg.startsWith('-'))
  if (!subCommands || !name || !(name in subCommands)) return [cmd, parent]
  const entry = subCommands[name]
  const sub = (await (typeof entry === 'function' ? entry() : entry)) as CommandDef
  return resolveCommand(sub, rawArgs.slice(rawArgs.indexOf(name) + 1), cmd)
}

function stripAnsi(text: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: ANSI colour sequences start with ESC
  return text.replace(/\u001B\[[0-9;]*m/g, '')
}

const rawArgs = process.argv.slice(2)
const code = await main(rawArgs)
process.exitCode = code
// `svc dev` serves until it is stopped. Every other command is done here,
// but `svc tasks run` has imported the app's routes, and a module-scope timer
// (a hot route's setInterval) or a handler that ignored its abort signal
// would keep the process up forever: end it, once stdout and stderr have
// flushed so that piped output is never cut short. A process with nothing
// open has made no stream, so nothing can be queued (see _output.ts).
if (rawArgs.find((arg) => !arg.startsWith('-')) !== 'dev') {
  if (hasOpenResources()) await Promise.all([flushed(stdio('stdout')), flushed(stdio('stderr'))])
  process.exit(code)
}

function flushed(stream: NodeJS.WriteStream): Promise<void> {
  // A write's callback runs once it and every earlier write are handed to the OS.
  return new Promise((resolve) => stream.write('', () => resolve()))
}
