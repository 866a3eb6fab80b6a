/** Errors a command throws for `main` to print. Commands never print errors or exit themselves. */

/** Bad command-line input: `main` prints the command's usage, then the message. */
export class UsageError extends Error {
  override name = 'UsageError'
}

/** citty's own argument errors (unknown command, missing positional) carry this name. */
export function isUsageError(error: unknown): error is Error {
  return error instanceof UsageError || (error instanceof Error && error.name === 'CLIError')
}

/** Ends the command with an exit code after it has printed its own output. */
export class ExitCode extends Error {
  override name = 'ExitCode'
  readonly code: number
  constructor(code: number) {
    super(`exit code ${code}`)
    this.code = code
  }
}
