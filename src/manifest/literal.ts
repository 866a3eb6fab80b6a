/**
 * The static-literal reader. Deployment config is a literal contract, read
 * without running the app (docs/routes.md "Route config"): strings, finite numbers
 * (numeric separators and a leading minus included), booleans, null, arrays
 * and nested objects, optionally wrapped in parentheses, `as const` or
 * `satisfies T`. Anything the scanner would have to evaluate (calls,
 * references, spreads, computed keys, template literals, shorthand
 * properties) is rejected at the offending node, and reading goes on so
 * every problem in a file is reported at once.
 */
import { type Node, nameOf, unwrap } from './ast.ts'
import type { ExportEntry } from './module-exports.ts'
import type { Reporter } from './reporter.ts'

/** A literal value together with the syntax it was read from, for positions. */
export interface StaticValue {
  /** The value node, with TypeScript wrappers and parentheses removed. */
  node: Node
  /** The plain value; `undefined` where the literal was rejected. */
  value: unknown
  /** False when this value, or anything inside it, was rejected. */
  ok: boolean
  /** Object literals: each property's key node and value, by key. */
  properties?: Map<string, StaticProperty>
  /** Array literals: each element. */
  items?: StaticValue[]
}

export interface StaticProperty {
  key: Node
  value: StaticValue
}

/** A rejected node and why. */
export interface LiteralProblem {
  node: Node
  message: string
}

/**
 * Reads `node` as a static literal. `label` names the value in messages
 * (`route.compute.memory`). Problems are appended to `problems`.
 */
export function readStaticLiteral(node: Node, label: string, source: string, problems: LiteralProblem[]): StaticValue {
  const inner = unwrap(node)
  const reject = (at: Node, message: string): StaticValue => {
    problems.push({ node: at, message })
    return { node: inner, value: undefined, ok: false }
  }

  switch (inner.type) {
    case 'Literal': {
      if ('regex' in inner && inner.regex) return reject(inner, `${label} must be a static literal, not a regular expression`)
      if (typeof inner.value === 'bigint' || inner.bigint != null) {
        return reject(inner, `${label} must be a static literal, not a BigInt; write a plain number`)
      }
      if (typeof inner.value === 'number' && !Number.isFinite(inner.value)) {
        return reject(inner, `${label} must be a finite number (got ${snippet(source, inner)})`)
      }
      return { node: inner, value: inner.value, ok: true }
    }
    case 'UnaryExpression': {
      const argument = unwrap(inner.argument)
      if ((inner.operator === '-' || inner.operator === '+') && argument.type === 'Literal' && typeof argument.value === 'number') {
        if (!Number.isFinite(argument.value)) return reject(inner, `${label} must be a finite number (got ${snippet(source, inner)})`)
        return { node: inner, value: inner.operator === '-' ? -argument.value : argument.value, ok: true }
      }
      if (
        (inner.operator === '-' || inner.operator === '+') &&
        argument.type === 'Identifier' &&
        (argument.name === 'Infinity' || argument.name === 'NaN')
      ) {
        return reject(inner, `${label} must be a finite number (got ${snippet(source, inner)})`)
      }
      return reject(inner, `${label} must be a static literal, not an expression (${snippet(source, inner)}); write the value itself`)
    }
    case 'TemplateLiteral':
      return reject(inner, `${label} must be a quoted string, not a template literal (${snippet(source, inner)})`)
    case 'Identifier':
      if (inner.name === 'Infinity' || inner.name === 'NaN') {
        return reject(inner, `${label} must be a finite number (got ${inner.name})`)
      }
      if (inner.name === 'undefined') return reject(inner, `${label} must be a static literal, not undefined; leave the field out instead`)
      return reject(inner, `${label} must be a static literal, not a reference to ${inner.name}; write the value inline`)
    case 'CallExpression':
    case 'NewExpression':
      return reject(inner, `${label} must be a static literal, not a call (${snippet(source, inner)}); write the value itself`)
    case 'ArrayExpression':
      return readArray(inner, label, source, problems)
    case 'ObjectExpression':
      return readObject(inner, label, source, problems)
    default:
      return reject(inner, `${label} must be a static literal, not ${describe(inner)} (${snippet(source, inner)})`)
  }
}

/**
 * Reads an exported binding as a static literal. The value must be written
 * in this file: the scanner never follows imports, so a re-exported config
 * cannot be checked.
 */
export function readExportLiteral(
  entry: ExportEntry | undefined,
  label: string,
  source: string,
  report: Reporter,
): StaticValue | undefined {
  if (!entry) return undefined
  if (entry.init) {
    const problems: LiteralProblem[] = []
    const value = readStaticLiteral(entry.init, label, source, problems)
    for (const problem of problems) report.error(problem.node, problem.message)
    return value
  }
  const where =
    entry.binding === 'import' || entry.binding === 're-export'
      ? 'is imported from another module; declare it in this file, the scanner does not follow imports'
      : entry.binding === 'function' || entry.binding === 'class'
        ? `is a ${entry.binding}; export a literal instead`
        : `has no value the scanner can read; write export const ${label} = <literal>`
  report.error(entry.node, `${label} ${where}`)
  return undefined
}

function readArray(node: Node, label: string, source: string, problems: LiteralProblem[]): StaticValue {
  const items: StaticValue[] = []
  const value: unknown[] = []
  let ok = true
  node.elements.forEach((element: Node | null, index: number) => {
    if (element === null) {
      problems.push({ node, message: `${label} must not have holes; write null for an empty entry` })
      ok = false
      return
    }
    if (element.type === 'SpreadElement') {
      problems.push({
        node: element,
        message: `${label} must be a static literal, not a spread (${snippet(source, element)}); write the entries inline`,
      })
      ok = false
      return
    }
    const item = readStaticLiteral(element, `${label}[${index}]`, source, problems)
    items.push(item)
    value.push(item.value)
    ok &&= item.ok
  })
  return { node, value, ok, items }
}

function readObject(node: Node, label: string, source: string, problems: LiteralProblem[]): StaticValue {
  const properties = new Map<string, StaticProperty>()
  const value: Record<string, unknown> = {}
  let ok = true
  for (const property of node.properties as Node[]) {
    if (property.type === 'SpreadElement') {
      problems.push({
        node: property,
        message: `${label} must be a static literal, not a spread (${snippet(source, property)}); write the fields inline`,
      })
      ok = false
      continue
    }
    if (property.computed) {
      problems.push({
        node: property.key,
        message: `${label} must not use a computed property key ([${snippet(source, property.key)}]); write the key as a name or a quoted string`,
      })
      ok = false
      continue
    }
    const key = keyName(property.key)
    if (key === undefined) {
      problems.push({ node: property.key, message: `${label} has a key the scanner cannot read (${snippet(source, property.key)})` })
      ok = false
      continue
    }
    const path = `${label}.${key}`
    if (property.shorthand) {
      problems.push({
        node: property,
        message: `${path} is a shorthand property that refers to a variable; write ${key}: <value> with the value inline`,
      })
      ok = false
      continue
    }
    if (property.method || property.kind === 'get' || property.kind === 'set') {
      problems.push({ node: property, message: `${path} must be a static literal, not a method or accessor` })
      ok = false
      continue
    }
    const item = readStaticLiteral(property.value, path, source, problems)
    properties.set(key, { key: property.key, value: item })
    value[key] = item.value
    ok &&= item.ok
  }
  return { node, value, ok, properties }
}

function keyName(key: Node): string | undefined {
  const name = nameOf(key)
  if (name !== undefined) return name
  if (key.type === 'Literal' && typeof key.value === 'number') return String(key.value)
  return undefined
}

const DESCRIPTIONS: Record<string, string> = {
  BinaryExpression: 'an expression',
  LogicalExpression: 'an expression',
  ConditionalExpression: 'a conditional expression',
  MemberExpression: 'a property access',
  ArrowFunctionExpression: 'a function',
  FunctionExpression: 'a function',
  ClassExpression: 'a class',
  AwaitExpression: 'an await expression',
  TaggedTemplateExpression: 'a tagged template',
  AssignmentExpression: 'an assignment',
  SequenceExpression: 'an expression',
  ChainExpression: 'a property access',
}

function describe(node: Node): string {
  return DESCRIPTIONS[node.type] ?? 'an expression'
}

/** The node's source, shortened for messages. */
export function snippet(source: string, node: Node, max = 40): string {
  const text = source.slice(node.start, node.end).replace(/\s+/g, ' ')
  return text.length > max ? `${text.slice(0, max - 1)}…` : text
}
