/**
 * Reads a page file's `page` export. `mode`, `revalidate` and `tags` decide
 * how a page is deployed, so they must be static literals and `mode` a quoted
 * string. Presentation fields such as
 * `styles: [sheet]` reference code on purpose: the renderer evaluates them
 * later, so the scanner leaves them out of the manifest instead of failing.
 */
import type { PageMode } from '../runtime/types.ts'
import { unwrap } from './ast.ts'
import { type LiteralProblem, type StaticValue, readExportLiteral, readStaticLiteral, snippet } from './literal.ts'
import type { ModuleExports } from './module-exports.ts'
import type { Reporter } from './reporter.ts'

const PAGE_MODES: readonly PageMode[] = ['static', 'client', 'server', 'hybrid']
/** Fields read as deployment config; every other field belongs to the renderer. */
const DEPLOYMENT_FIELDS = new Set(['mode', 'revalidate', 'tags'])

export interface PageConfig {
  mode: PageMode
  revalidate: number | null
  tags: string[]
}

export function readPageConfig(exports: ModuleExports, source: string, report: Reporter): PageConfig {
  const config: PageConfig = { mode: 'server', revalidate: null, tags: [] }
  const entry = exports.names.get('page')
  if (!entry) return config
  if (!entry.init) {
    readExportLiteral(entry, 'page', source, report)
    return config
  }
  const object = unwrap(entry.init)
  if (object.type !== 'ObjectExpression') {
    report.error(object, `page must be an object literal such as { mode: 'static' } (got ${snippet(source, object)})`)
    return config
  }

  const fields = new Map<string, StaticValue>()
  for (const property of object.properties) {
    if (property.type === 'SpreadElement') {
      report.error(property, `page must not use a spread (${snippet(source, property)}); write mode, revalidate and tags inline`)
      continue
    }
    if (property.computed) {
      report.error(property.key, `page must not use a computed property key ([${snippet(source, property.key)}])`)
      continue
    }
    const name =
      property.key.type === 'Identifier' ? property.key.name : typeof property.key.value === 'string' ? property.key.value : undefined
    if (name === undefined || !DEPLOYMENT_FIELDS.has(name)) continue
    if (property.shorthand) {
      report.error(property, `page.${name} is a shorthand property that refers to a variable; write ${name}: <value> with the value inline`)
      continue
    }
    const problems: LiteralProblem[] = []
    fields.set(name, readStaticLiteral(property.value, `page.${name}`, source, problems))
    for (const problem of problems) report.error(problem.node, problem.message)
  }

  const mode = fields.get('mode')
  if (mode?.ok) {
    if (typeof mode.value === 'string' && (PAGE_MODES as readonly string[]).includes(mode.value)) {
      config.mode = mode.value as PageMode
    } else {
      report.error(
        mode.node,
        `page.mode must be a quoted string, one of ${PAGE_MODES.map((m) => `'${m}'`).join(', ')} (got ${snippet(source, mode.node)})`,
      )
    }
  }
  const revalidate = fields.get('revalidate')
  if (revalidate?.ok && revalidate.value !== null) {
    if (typeof revalidate.value === 'number' && revalidate.value >= 0) config.revalidate = revalidate.value
    else report.error(revalidate.node, `page.revalidate must be a number of seconds, 0 or more (got ${snippet(source, revalidate.node)})`)
  }
  const tags = fields.get('tags')
  if (tags?.ok) {
    if (Array.isArray(tags.value) && tags.value.every((tag) => typeof tag === 'string')) config.tags = tags.value as string[]
    else report.error(tags.node, `page.tags must be an array of strings (got ${snippet(source, tags.node)})`)
  }
  return config
}
