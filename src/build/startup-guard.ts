/**
 * The first module of a built server (node, bun, deno): until the server
 * listens, an error that would end the process (a weak SVC_TASK_SECRET, a
 * bad SVC_STORE_URL, a database that is down, a taken port, an old Node) is
 * printed as its message, the messages of its causes, and a few named stack
 * frames, and the process exits with code 1. Left to the runtime, such an
 * error is printed after the source line it was thrown from, and a bundle's
 * lines are its whole minified code: tens of kilobytes before the message.
 *
 * The generated entry imports `started` from it first, so that it is
 * evaluated before the app's modules and svc's own (their load-time errors
 * are start-up errors too), and calls `started()` once the server listens:
 * from then on, errors go to the runtime's own handling.
 */

/** The module id the generated entry imports the guard by. */
export const STARTUP_GUARD_ID = 'svc:startup'

/** How many stack frames of the error are printed, at most. */
const MAX_FRAMES = 5

/**
 * The guard's source. Plain JavaScript that any Node, Bun or Deno parses:
 * it must report the Node version error on a Node that svc does not run on.
 */
export function startupGuardSource(): string {
  return `const MAX_FRAMES = ${MAX_FRAMES}
function describe(value) {
  return value instanceof Error ? value.name + ': ' + value.message : String(value)
}
function startupReport(error) {
  const lines = [describe(error)]
  const seen = new Set([error])
  // A cause whose message the text above already holds adds nothing.
  for (let cause = error instanceof Error ? error.cause : undefined; cause != null && !seen.has(cause); cause = cause instanceof Error ? cause.cause : undefined) {
    seen.add(cause)
    const text = cause instanceof Error ? cause.message : String(cause)
    if (!lines.some((line) => line.includes(text))) lines.push('  caused by ' + describe(cause))
  }
  // Only frames that name a function: a frame without one points into a
  // bundle's single line, and those of the runtime's internals say nothing.
  const stack = error instanceof Error && typeof error.stack === 'string' ? error.stack.split('\\n') : []
  const frames = stack.filter((line) => /^\\s+at (?:async )?[^\\s(]+ \\((?!node:)/.test(line))
  for (const frame of frames.slice(0, MAX_FRAMES)) lines.push('    ' + frame.trim())
  return lines.join('\\n')
}
function failed(error) {
  console.error(startupReport(error))
  process.exit(1)
}
process.on('uncaughtException', failed)
export function started() {
  process.off('uncaughtException', failed)
}
`
}
