/**
 * FNV-1a, 32 bits, of a string's UTF-16 code units: short, stable across
 * processes, platforms and releases, and edge-safe. For names and
 * placements that every process must compute alike, never for secrets.
 */
export function fnv1a(text: string): number {
  let hash = 0x811c9dc5
  for (let i = 0; i < text.length; i++) hash = Math.imul(hash ^ text.charCodeAt(i), 0x01000193)
  return hash >>> 0
}
