/** How far `t.advance()` moves time: milliseconds, or text such as `'30s'`, `'15m'`, `'2h'`, `'1d'`, `'1w'`. */
export type Duration = number | `${number}${DurationUnit}`

type DurationUnit = 'ms' | 's' | 'm' | 'h' | 'd' | 'w'

const UNIT_MS: Record<DurationUnit, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 }

const TEXT = /^(\d+(?:\.\d+)?)\s*(ms|s|m|h|d|w)$/

/** `duration` in milliseconds; `where` names the call in the error for one that is none. */
export function durationMs(duration: unknown, where: string): number {
  if (typeof duration === 'number' && Number.isFinite(duration) && duration >= 0) return duration
  const match = typeof duration === 'string' ? TEXT.exec(duration.trim()) : null
  if (match) return Number(match[1]) * UNIT_MS[match[2] as DurationUnit]
  throw new TypeError(
    `${where}: the time to move must be milliseconds (a number, 0 or more) or a number and a unit, one of ms, s, m, h, d, w, as in '90s' or '1d' (got ${typeof duration === 'string' ? JSON.stringify(duration) : String(duration)})`,
  )
}
