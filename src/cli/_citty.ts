/**
 * Loads citty without the ES module facade of `node:util`. citty imports
 * `parseArgs` from it, and the facade of a built-in reads every export, which
 * runs each of util's lazy getters and loads the modules behind them (the
 * diff, worker and colour helpers): some 10 ms of every command's start-up.
 * For the time of this one import, a resolve hook hands citty a module that
 * takes `parseArgs` from `process.getBuiltinModule()`, which builds no facade.
 */

// What citty imports from node:util. A citty that imports more fails to link
// here, at the start of every command, rather than misbehaving later.
const UTIL = "data:text/javascript,export const { parseArgs } = process.getBuiltinModule('node:util')"

export async function importCitty(): Promise<typeof import('citty')> {
  // Node 22.15 and later; an older Node imports citty as it is.
  const hooks = process.getBuiltinModule('node:module').registerHooks?.({
    resolve(specifier, context, next) {
      if (specifier === 'node:util' && context.parentURL?.includes('/citty/')) return { url: UTIL, shortCircuit: true }
      return next(specifier, context)
    },
  })
  try {
    return await import('citty')
  } finally {
    // Every later import (a command, the app's own modules) resolves as usual.
    hooks?.deregister()
  }
}
