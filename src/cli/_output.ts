/** Plain output helpers: JSON and aligned tables on stdout, diagnostics on stderr. */

const { writeSync } = process.getBuiltinModule('node:fs')

export function printJson(value: unknown): void {
  writeLine('stdout', JSON.stringify(value, null, 2))
}

/** Left-aligned columns separated by two spaces; the header row is upper-cased. */
export function formatTable(header: string[], rows: string[][]): string {
  const all = [header.map((h) => h.toUpperCase()), ...rows]
  const widths = header.map((_, i) => Math.max(...all.map((row) => (row[i] ?? '').length)))
  return all
    .map((row) =>
      row
        .map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i])))
        .join('  ')
        .trimEnd(),
    )
    .join('\n')
}

export function printLines(stream: Stdio, lines: string[]): void {
  if (lines.length > 0) writeLine(stream, lines.join('\n'))
}

/**
 * Whether the process has anything open (a stdio stream on a pipe or a
 * terminal, a server, a timer): then a stream may hold queued output.
 * `process.getActiveResourcesInfo()` lists them; where it is missing, assume so.
 */
export function hasOpenResources(): boolean {
  return process.getActiveResourcesInfo?.().length !== 0
}

/**
 * `text` and a newline, in two writes: `${text}\n` would be a string of two
 * parts, which V8 copies into one before it can encode it, some 10 ms for a
 * megabyte of JSON.
 */
function writeLine(stream: Stdio, text: string): void {
  write(stream, text)
  write(stream, '\n')
}

/**
 * Writes `text` straight to the file descriptor while nothing else is open:
 * creating `process.stdout` or `process.stderr` costs some 5 ms of a
 * command's start-up, and a command that prints once needs neither. Once
 * something is open, a stream may have queued output, which this text must
 * follow, so it goes through the stream. So does whatever the descriptor does
 * not take at once: a pipe left non-blocking by another process and full
 * (EAGAIN). A reader that has gone away (EPIPE: `svc … | head`) takes
 * nothing more, and the rest is dropped without a word, as `head` expects.
 */
function write(stream: Stdio, text: string): void {
  if (gone.has(stream)) return
  if (hasOpenResources()) {
    stdio(stream).write(text)
    return
  }
  const bytes = Buffer.from(text)
  let written = 0
  try {
    while (written < bytes.length) written += writeSync(stream === 'stdout' ? 1 : 2, bytes, written)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EPIPE') gone.add(stream)
    else stdio(stream).write(bytes.subarray(written))
  }
}

type Stdio = 'stdout' | 'stderr'

/** The outputs whose reader has gone away. */
const gone = new Set<Stdio>()
const watched = new Set<Stdio>()

/**
 * `process.stdout` or `process.stderr`, whose EPIPE (its reader has gone
 * away) ends what it prints quietly instead of as an unhandled error. Every
 * write of the CLI's own to a stream goes through here.
 */
export function stdio(stream: Stdio): NodeJS.WriteStream {
  const out = process[stream]
  if (!watched.has(stream)) {
    watched.add(stream)
    out.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code !== 'EPIPE') throw error
      gone.add(stream)
    })
  }
  return out
}
