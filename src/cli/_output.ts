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

export function printLines(stream: 'stdout' | 'stderr', lines: string[]): void {
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
function writeLine(stream: 'stdout' | 'stderr', text: string): void {
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
 * (EAGAIN), or a closed one, whose error the stream reports as it always does.
 */
function write(stream: 'stdout' | 'stderr', text: string): void {
  if (hasOpenResources()) {
    process[stream].write(text)
    return
  }
  const bytes = Buffer.from(text)
  let written = 0
  try {
    while (written < bytes.length) written += writeSync(stream === 'stdout' ? 1 : 2, bytes, written)
  } catch {
    process[stream].write(bytes.subarray(written))
  }
}
