/**
 * Offsets to 1-based line and column. The parser reports UTF-16 offsets;
 * line starts are computed once per file, and only when a position is
 * actually needed, since most files never report one.
 */

export interface Position {
  line: number
  column: number
}

export type Locator = (offset: number) => Position

export function createLocator(source: string): Locator {
  let starts: number[] | undefined
  return (offset) => {
    starts ??= lineStarts(source)
    // Binary search for the last line start at or before the offset.
    let lo = 0
    let hi = starts.length - 1
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1
      if (starts[mid] <= offset) lo = mid
      else hi = mid - 1
    }
    return { line: lo + 1, column: offset - starts[lo] + 1 }
  }
}

function lineStarts(source: string): number[] {
  const starts = [0]
  for (let i = 0; i < source.length; i++) {
    const c = source.charCodeAt(i)
    // \n, a lone \r, and the \r of \r\n each end a line (ECMA-262 LineTerminator,
    // without the rare U+2028/U+2029, which editors do not count either).
    if (c === 10) starts.push(i + 1)
    else if (c === 13 && source.charCodeAt(i + 1) !== 10) starts.push(i + 1)
  }
  return starts
}
