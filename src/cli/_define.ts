/**
 * citty's `defineCommand`, which returns the command it is given, typed.
 * Command modules take it from here rather than from citty: resolving the
 * package `citty` (its package.json and exports map) costs some 4 ms for
 * every module that names it, and main.ts has loaded citty already.
 */
import type { ArgsDef, CommandDef } from 'citty'

export function defineCommand<const T extends ArgsDef = ArgsDef>(def: CommandDef<T>): CommandDef<T> {
  return def
}
