/**
 * Copies of run records as JSON would make them, without the trip through
 * text: `jsonCopy(value)` equals `JSON.parse(JSON.stringify(value))`.
 * `SqliteRunStore` keeps the records it writes as objects and hands out
 * copies of them, a replay hands the handler its own copy of a recorded
 * step's output, and this walk costs a fraction of a parse.
 *
 * It follows the serialization steps of ECMA-262 (`JSON.stringify`,
 * SerializeJSONProperty): `toJSON` is called with the property's key,
 * boxed primitives are unwrapped, `undefined`, functions and symbols are
 * dropped from objects and become `null` in arrays, non-finite numbers
 * become `null` and -0 becomes 0, and a BigInt throws the same TypeError.
 */

// What JSON.stringify leaves out of an object (and writes as null in an array).
const DROP = Symbol('dropped')

/** `JSON.parse(JSON.stringify(value))`, with `undefined` where `JSON.stringify` returns it. */
export function jsonCopy<T>(value: T): T {
  const out = copy(value, '')
  return (out === DROP ? undefined : out) as T
}

function copy(input: unknown, key: string | number): unknown {
  let value = input
  if (value !== null && (typeof value === 'object' || typeof value === 'bigint')) {
    const toJSON = (value as { toJSON?: unknown }).toJSON
    if (typeof toJSON === 'function') value = toJSON.call(value, String(key))
  }
  if (value === null) return null
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return value
    case 'number':
      return Number.isFinite(value) ? value + 0 : null
    case 'bigint':
      throw new TypeError('Do not know how to serialize a BigInt')
    case 'object':
      break
    default:
      return DROP
  }
  if (value instanceof Number || value instanceof String || value instanceof Boolean) return copy(value.valueOf(), key)
  if (Array.isArray(value)) {
    const out = new Array(value.length)
    for (let i = 0; i < value.length; i++) {
      const item = copy(value[i], i)
      out[i] = item === DROP ? null : item
    }
    return out
  }
  const out: Record<string, unknown> = {}
  for (const name of Object.keys(value as object)) {
    const item = copy((value as Record<string, unknown>)[name], name)
    if (item === DROP) continue
    // A "__proto__" member is data in JSON; assigning it would set the prototype.
    if (name === '__proto__') Object.defineProperty(out, name, { value: item, enumerable: true, writable: true, configurable: true })
    else out[name] = item
  }
  return out
}
