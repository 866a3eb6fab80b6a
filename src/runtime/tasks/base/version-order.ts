/**
 * Which way is forward between a task's versions, for `versionPolicy:
 * 'migrate'` (versions.ts): a run moves to a newer version only, however
 * recently a process of an older one (re)started.
 *
 * Release numbers are ordered as such: an optional `v`, then whole numbers
 * of at most 10 digits joined by dots (`7`, `v2`, `1.10.3`, `2024.05.01`).
 * The limit keeps a digest that happens to hold only decimal digits (svc's
 * are 12 hex digits) from passing for one. When the run's version or a
 * live one is not a release number (a digest, a git commit), the live
 * versions are ordered by when the processes serving them first
 * registered, earliest first. Edge-safe: no `node:` import.
 */

const RELEASE = /^[vV]?(\d{1,10}(?:\.\d{1,10})*)$/

/** The numbers of release number `version`, or undefined when it is none. */
export function releaseParts(version: string): number[] | undefined {
  const match = RELEASE.exec(version)
  return match ? match[1].split('.').map(Number) : undefined
}

/** Negative when release `a` comes before `b`, positive after, 0 when they are the same (`1.0` is `1`). */
export function compareReleases(a: readonly number[], b: readonly number[]): number {
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    const diff = (a[i] ?? 0) - (b[i] ?? 0)
    if (diff !== 0) return diff
  }
  return 0
}

/**
 * The version a run of version `from` moves to: the newest of `live`, the
 * versions of its task that live processes serve, in the order they were
 * first registered (earliest first). Never one the run has moved away
 * from (`past`: the versions it migrated from), nor, between release
 * numbers, one before `from`. Undefined when none is left.
 */
export function forwardVersion(from: string, past: readonly string[], live: readonly string[]): string | undefined {
  const left = live.filter((version) => version !== from && !past.includes(version))
  const own = releaseParts(from)
  const releases = left.map(releaseParts)
  if (own === undefined || releases.some((parts) => parts === undefined)) return left.at(-1)
  let newest: number | undefined
  for (const [i, parts] of releases.entries()) {
    if (compareReleases(parts!, own) < 0) continue
    if (newest === undefined || compareReleases(parts!, releases[newest]!) > 0) newest = i
  }
  return newest === undefined ? undefined : left[newest]
}
