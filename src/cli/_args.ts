/**
 * Arguments every command shares, and the strictness citty leaves out:
 * citty accepts unknown flags silently, so a typo such as `--jsn` would run
 * the command with defaults. `checkArgs` turns that into a usage error.
 */
import type { ArgsDef } from 'citty'
import { UsageError } from './_errors.ts'

// Not `import … from 'node:fs'`: its module facade loads fs.promises and some
// thirty built-ins behind it at the start of every command (see bin/svc.mjs).
const { statSync } = process.getBuiltinModule('node:fs')
const { resolve } = process.getBuiltinModule('node:path')

export const rootArg = {
  root: {
    type: 'string',
    description: 'The app directory (holds src/api and src/pages)',
    valueHint: 'dir',
  },
} as const satisfies ArgsDef

export const jsonArg = {
  json: {
    type: 'boolean',
    description: 'Print JSON on stdout',
    default: false,
  },
} as const satisfies ArgsDef

/** The server a command that talks to a running server (`svc runs`, `svc tasks fire`) asks; `runsClient` reads it. */
export const urlArg = {
  url: {
    type: 'string',
    description: 'The server address (default: SVC_TASK_URL, else http://127.0.0.1:<PORT or 3000>)',
    valueHint: 'url',
  },
} as const satisfies ArgsDef

const NEGATIVE_NUMBER = /^-\.?\d/

/** Rejects flags and positionals the command does not define. */
export function checkArgs(rawArgs: readonly string[], defs: ArgsDef): void {
  const known = new Map<string, string>()
  let positionals = 0
  for (const [name, def] of Object.entries(defs)) {
    if (def.type === 'positional') {
      positionals++
      continue
    }
    known.set(name, def.type ?? 'string')
    known.set(kebab(name), def.type ?? 'string')
    const aliases = 'alias' in def ? def.alias : undefined
    for (const alias of typeof aliases === 'string' ? [aliases] : (aliases ?? [])) known.set(alias, def.type ?? 'string')
  }
  let seenPositionals = 0
  for (let i = 0; i < rawArgs.length; i++) {
    const arg = rawArgs[i]
    if (arg === '--') break
    if (!arg.startsWith('-') || arg === '-') {
      if (++seenPositionals > positionals) throw new UsageError(`Unexpected argument: ${arg}`)
      continue
    }
    const [flag, inlineValue] = arg.replace(/^--?/, '').split(/=(.*)/s, 2)
    const name = flag.startsWith('no-') && known.get(flag.slice(3)) === 'boolean' ? flag.slice(3) : flag
    const type = known.get(name)
    if (type === undefined) throw new UsageError(`Unknown option: ${arg.split('=')[0]}`)
    if (type === 'boolean') {
      if (inlineValue !== undefined && inlineValue !== 'true' && inlineValue !== 'false') {
        throw new UsageError(`--${name} takes no value (got ${inlineValue})`)
      }
      continue
    }
    if (inlineValue !== undefined) {
      if (inlineValue === '') throw new UsageError(`--${name} needs a value`)
      continue
    }
    const next = rawArgs[i + 1]
    // A negative number is a value, not a flag (`--input -1` is JSON), and citty reads it as one.
    if (next === undefined || (next.startsWith('-') && !NEGATIVE_NUMBER.test(next))) throw new UsageError(`--${name} needs a value`)
    i++
  }
}

/** The absolute app directory of `--root`, defaulting to the current directory. */
export function resolveRoot(root: string | undefined): string {
  const dir = resolve(root ?? process.cwd())
  let isDirectory = false
  try {
    isDirectory = statSync(dir).isDirectory()
  } catch {}
  if (!isDirectory) throw new UsageError(`--root ${root ?? dir}: no such directory`)
  return dir
}

function kebab(name: string): string {
  return name.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)
}

/** The value of a `--input` flag, parsed; undefined without one. */
export function parseInputArg(raw: string | undefined): unknown {
  if (raw === undefined) return undefined
  return parseJsonArg(raw, '--input', `--input '{"key":"value"}'`)
}

/**
 * `raw`, one JSON value given on the command line as `what` (`--input`,
 * `The signal data`), parsed; `example` is how to give one.
 */
export function parseJsonArg(raw: string, what: string, example: string): unknown {
  try {
    return JSON.parse(raw)
  } catch (error) {
    // The value's fault, not the command line's: the message says what to
    // fix, and the command's usage would only bury it.
    const shown = raw.length > 60 ? `${raw.slice(0, 57)}...` : raw
    throw new Error(
      `${what} is not valid JSON: ${(error as Error).message} (got ${JSON.stringify(shown)}). Pass one JSON value, quoted for the shell, such as ${example}`,
    )
  }
}
