/**
 * Config errors found while scanning an app. Every error points at a file,
 * a 1-based line and column and reads `file:line:column: message`, the form
 * editors and terminals turn into links.
 */

/** One problem in an app's route or page config. */
export class ConfigError extends Error {
  override name = 'ConfigError'
  /** Path relative to the app root, with `/` separators. */
  readonly file: string
  /** 1-based line. */
  readonly line: number
  /** 1-based column, in UTF-16 code units. */
  readonly column: number

  constructor(file: string, line: number, column: number, message: string) {
    super(message)
    this.file = file
    this.line = line
    this.column = column
  }

  /** `file:line:column: message` */
  override toString(): string {
    return formatConfigError(this)
  }

  toJSON(): { file: string; line: number; column: number; message: string } {
    return { file: this.file, line: this.line, column: this.column, message: this.message }
  }
}

/** `file:line:column: message` */
export function formatConfigError(error: Pick<ConfigError, 'file' | 'line' | 'column' | 'message'>): string {
  return `${error.file}:${error.line}:${error.column}: ${error.message}`
}

/** Orders errors by file, then position, so output is stable between runs. */
export function compareConfigErrors(a: ConfigError, b: ConfigError): number {
  if (a.file !== b.file) return a.file < b.file ? -1 : 1
  return a.line - b.line || a.column - b.column
}

/**
 * Thrown by callers that cannot go on with config errors (a build, a dev
 * server start). Carries every error, not only the first; the message holds
 * one formatted line per error.
 */
export class ManifestError extends Error {
  override name = 'ManifestError'
  readonly errors: ConfigError[]

  constructor(errors: ConfigError[]) {
    super(errors.map(formatConfigError).join('\n'))
    this.errors = errors
  }
}

/** Throws a `ManifestError` when a scan found config errors. */
export function assertNoConfigErrors(result: { errors: ConfigError[] }): void {
  if (result.errors.length > 0) throw new ManifestError(result.errors)
}
