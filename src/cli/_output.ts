/** Plain output helpers: JSON and aligned tables on stdout, diagnostics on stderr. */

export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`)
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
  if (lines.length > 0) process[stream].write(`${lines.join('\n')}\n`)
}
