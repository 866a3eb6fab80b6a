/** JSON as a tree of `<details>`: objects and arrays fold, the first levels open. */
import { type Child, h } from './dom.ts'

const OPEN_DEPTH = 2

export function jsonView(value: unknown, depth = 0): Child {
  if (value === undefined) return h('span', { class: 'muted' }, 'none')
  if (value === null || typeof value !== 'object')
    return h('code', { class: `j-${value === null ? 'null' : typeof value}` }, JSON.stringify(value))
  const isArray = Array.isArray(value)
  const entries: [string, unknown][] = isArray ? value.map((item, index) => [String(index), item]) : Object.entries(value)
  if (entries.length === 0) return h('code', null, isArray ? '[]' : '{}')
  const label = isArray
    ? `[ ${entries.length} item${entries.length === 1 ? '' : 's'} ]`
    : `{ ${entries.length} key${entries.length === 1 ? '' : 's'} }`
  return h(
    'details',
    { class: 'json', open: depth < OPEN_DEPTH },
    h('summary', null, label),
    h(
      'ul',
      null,
      entries.map(([key, item]) => h('li', null, h('span', { class: 'key' }, `${key}: `), jsonView(item, depth + 1))),
    ),
  )
}
