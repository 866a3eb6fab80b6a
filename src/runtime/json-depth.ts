/**
 * How deeply JSON may nest arrays and objects, on the way in (request
 * bodies) and on the way out (run inputs, results, step outputs, token
 * payloads). Real payloads stay within a few dozen levels; a limit far
 * below the engine's stack keeps every record readable: `JSON.stringify`
 * and `JSON.parse` recurse, and a run record wraps its values a few levels
 * deeper still. Edge-safe.
 */

/** The deepest nesting of arrays and objects accepted, in levels. */
export const MAX_JSON_DEPTH = 256

/**
 * Whether JSON `text` nests arrays and objects deeper than `MAX_JSON_DEPTH`.
 * One linear pass that keeps a counter, so no input can overflow the stack;
 * brackets inside strings do not count. The text need not be valid JSON
 * (`JSON.parse` judges that), so it can run before parsing.
 */
export function isJsonTooDeep(text: string): boolean {
  let depth = 0
  let i = 0
  const n = text.length
  while (i < n) {
    const c = text.charCodeAt(i)
    if (c === 0x22) {
      // Skip the string: to the next quote that no backslash escapes.
      i++
      while (i < n) {
        const d = text.charCodeAt(i)
        if (d === 0x5c) i += 2
        else if (d === 0x22) break
        else i++
      }
    } else if (c === 0x5b || c === 0x7b) {
      if (++depth > MAX_JSON_DEPTH) return true
    } else if (c === 0x5d || c === 0x7d) {
      depth--
    }
    i++
  }
  return false
}
