/** Errors a command throws for `main` to print. Commands never print errors or exit themselves. */

/** Bad command-line input: `main` prints the command's usage, then the message. */
export class UsageError extends Error {
  override name = 'UsageError'
}

/** citty's own argument errors (unknown command, missing positional) carry this name. */
export function isUsageError(error: unknown): error is Error {
  return error instanceof UsageError || (error instanceof Error && error.name === 'CLIError')
}
