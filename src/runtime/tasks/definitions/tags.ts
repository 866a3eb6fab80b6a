/**
 * Run tags (`EnqueueOptions.tags`): short labels a run is started with and
 * found by (`GET /__tasks/runs?tag=…`, `listRuns({ tags })`), such as
 * `tenant:acme`. The rule is written once here, for every way a run starts
 * and every filter that names a tag: at most `MAX_TAGS` tags, each 1 to
 * `MAX_TAG_LENGTH` printable ASCII characters with no space or comma (so a
 * list of them travels in one `Svc-Tags` header, comma-separated).
 */
import { describe } from '../../describe.ts'

/** The most tags a run carries. */
export const MAX_TAGS = 10
/** The longest tag, in characters. */
export const MAX_TAG_LENGTH = 64

const TAG = /^[\x21-\x2b\x2d-\x7e]{1,64}$/

/** What is wrong with `tag` as one tag, or `null`. */
export function tagProblem(tag: unknown): string | null {
  if (typeof tag !== 'string') return `a tag must be a string (got ${describe(tag)})`
  if (tag.length > MAX_TAG_LENGTH) return `a tag must be at most ${MAX_TAG_LENGTH} characters (got ${tag.length}: ${describe(tag)})`
  if (!TAG.test(tag)) {
    return `a tag must be 1 to ${MAX_TAG_LENGTH} printable ASCII characters with no space or comma, such as "tenant:acme" (got ${describe(tag)})`
  }
  return null
}

/**
 * `tags`: absent, or an array of at most `MAX_TAGS` tags, each as
 * `tagProblem` allows. A tag given twice is kept once, in its first place.
 * Throws a `TypeError` or `RangeError` starting with `where()`.
 */
export function tagsOption(value: unknown, where: () => string, label = 'tags'): string[] | undefined {
  if (value === undefined) return undefined
  if (!Array.isArray(value)) {
    throw new TypeError(`${where()}: ${label} must be an array of strings, such as ["tenant:acme"] (got ${describe(value)})`)
  }
  const tags = value.length <= MAX_TAGS ? unique(value as unknown[]) : [...new Set(value as unknown[])]
  if (tags.length > MAX_TAGS) throw new RangeError(`${where()}: ${label} may hold at most ${MAX_TAGS} tags (got ${tags.length})`)
  for (const tag of tags) {
    const problem = tagProblem(tag)
    if (problem !== null) throw new TypeError(`${where()}: ${label}: ${problem}`)
  }
  return tags.length === 0 ? undefined : (tags as string[])
}

/** `values` without repeats, in the order of their first place: for a few, with no `Set` made on every trigger. */
function unique(values: readonly unknown[]): unknown[] {
  const out: unknown[] = []
  for (const value of values) if (!out.includes(value)) out.push(value)
  return out
}

/** The tags of a `Svc-Tags` header (comma-separated, spaces around each ignored), under `tagsOption`. */
export function tagsFromHeader(header: string, where: () => string): string[] | undefined {
  return tagsOption(
    header.split(',').map((tag) => tag.trim()),
    where,
    'the comma-separated tags',
  )
}
