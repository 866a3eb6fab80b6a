/**
 * The small slice of ESTree the scanner reads, and helpers over it. Nodes
 * come from oxc-parser as plain objects with `start`
 * and `end` UTF-16 offsets.
 */

/** An ESTree node. Only `type`, `start` and `end` are certain; the rest depends on `type`. */
export interface Node {
  type: string
  start: number
  end: number
  // biome-ignore lint/suspicious/noExplicitAny: the parser's nodes carry per-type fields the scanner reads by name
  [key: string]: any
}

const FUNCTION_TYPES = new Set(['FunctionDeclaration', 'FunctionExpression', 'ArrowFunctionExpression'])

export function isFunction(node: Node): boolean {
  return FUNCTION_TYPES.has(node.type)
}

/** The name of an identifier or string-literal key (`GET`, `'GET'`), else undefined. */
export function nameOf(node: Node | null | undefined): string | undefined {
  if (!node) return undefined
  if (node.type === 'Identifier') return node.name
  if (node.type === 'Literal' && typeof node.value === 'string') return node.value
  return undefined
}

/** Drops TypeScript wrappers and parentheses that do not change a value (`x as const`, `x satisfies T`, `x!`). */
export function unwrap(node: Node): Node {
  let current = node
  while (
    current.type === 'TSAsExpression' ||
    current.type === 'TSSatisfiesExpression' ||
    current.type === 'TSNonNullExpression' ||
    current.type === 'TSTypeAssertion' ||
    current.type === 'ParenthesizedExpression'
  ) {
    current = current.expression
  }
  return current
}

/** Names bound by a declaration pattern (`a`, `{ a, b: c }`, `[a, ...rest]`, `a = 1`). */
export function patternNames(pattern: Node | null | undefined, out: string[] = []): string[] {
  if (!pattern) return out
  switch (pattern.type) {
    case 'Identifier':
      out.push(pattern.name)
      break
    case 'ObjectPattern':
      for (const property of pattern.properties) {
        patternNames(property.type === 'RestElement' ? property.argument : property.value, out)
      }
      break
    case 'ArrayPattern':
      for (const element of pattern.elements) patternNames(element, out)
      break
    case 'AssignmentPattern':
      patternNames(pattern.left, out)
      break
    case 'RestElement':
      patternNames(pattern.argument, out)
      break
    case 'TSParameterProperty':
      patternNames(pattern.parameter, out)
      break
  }
  return out
}

// Keys that only ever hold primitives. Only an optimization: the walker
// checks each value anyway, so a missing entry costs time, a wrong one misses
// nodes (ExpressionStatement.expression and Property.value are nodes).
const SKIPPED_KEYS = new Set([
  'type',
  'start',
  'end',
  'raw',
  'regex',
  'bigint',
  'operator',
  'computed',
  'shorthand',
  'method',
  'async',
  'generator',
  'prefix',
  'optional',
  'delegate',
  'static',
  'declare',
  'sourceType',
])
/** Child keys by node type, learned from the first node of each type; oxc emits every key of a type, null or not. */
const CHILD_KEYS = new Map<string, string[]>()

/**
 * Calls `visit` for every child node of `node`, in source order. Keys that
 * never hold nodes are skipped, and the key list of each node type is
 * computed once: walking is a large share of scan time.
 */
export function forEachChild(node: Node, visit: (child: Node, key: string) => void): void {
  // Literals are the one type whose keys vary (regex, bigint), and they have no children.
  if (node.type === 'Literal') return
  let keys = CHILD_KEYS.get(node.type)
  if (keys === undefined) {
    keys = Object.keys(node).filter((key) => !SKIPPED_KEYS.has(key))
    CHILD_KEYS.set(node.type, keys)
  }
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i]
    const value = node[key]
    if (value === null || typeof value !== 'object') continue
    if (Array.isArray(value)) {
      for (let j = 0; j < value.length; j++) {
        const item = value[j]
        if (item !== null && typeof item === 'object' && typeof item.type === 'string') visit(item, key)
      }
    } else if (typeof value.type === 'string') {
      visit(value, key)
    }
  }
}

/*
 * The JS-shaped tree leaves out TypeScript's `importKind`/`exportKind`, so
 * type-only imports and exports are told apart by their keyword, read from
 * the source at the node's own offset (never by searching the text).
 */

/** `import type { A } from 'x'`, `export type { A }`, `export type * from 'x'`. */
export function isTypeOnlyDeclaration(node: Node, source: string): boolean {
  return /^(?:import|export)\s+type\b(?!\s*(?:from\b|,|=))/.test(source.slice(node.start, node.start + 40))
}

/** `{ type A }` inside an import or export list. */
export function isTypeOnlySpecifier(specifier: Node, source: string): boolean {
  return /^type\s/.test(source.slice(specifier.start, specifier.end)) && nameOf(specifier.imported ?? specifier.local) !== 'type'
}

/** Names a block declares directly (`let`, `const`, `var`, functions, classes). */
export function blockNames(statements: Node[]): Set<string> {
  const names = new Set<string>()
  for (const statement of statements) {
    if (statement.type === 'VariableDeclaration') {
      for (const declarator of statement.declarations) for (const name of patternNames(declarator.id)) names.add(name)
    } else if ((statement.type === 'FunctionDeclaration' || statement.type === 'ClassDeclaration') && statement.id) {
      names.add(statement.id.name)
    }
  }
  return names
}

/** `require('x')` with a literal specifier: the module name, else undefined. */
export function requiredModule(node: Node): string | undefined {
  if (node.type !== 'CallExpression' || node.callee.type !== 'Identifier' || node.callee.name !== 'require') return undefined
  const [first] = node.arguments
  return first?.type === 'Literal' && typeof first.value === 'string' ? first.value : undefined
}

export function memberName(node: Node): string | undefined {
  return node.computed
    ? node.property.type === 'Literal' && typeof node.property.value === 'string'
      ? node.property.value
      : undefined
    : node.property.name
}

/** The identifier at the base of `a.b[c].d()` or `a.get(x).add()`. */
export function rootName(node: Node): string | undefined {
  let current = node
  for (;;) {
    if (current.type === 'Identifier') return current.name
    if (current.type === 'MemberExpression') current = current.object
    else if (current.type === 'CallExpression') current = current.callee
    else if (current.type === 'ChainExpression' || current.type === 'TSNonNullExpression' || current.type === 'ParenthesizedExpression')
      current = current.expression
    else return undefined
  }
}

/** Identifiers referenced in an expression, not descending into functions. */
export function identifiersIn(node: Node, out: string[] = []): string[] {
  if (node.type === 'Identifier') out.push(node.name)
  else if (!isFunction(node)) forEachChild(node, (child) => identifiersIn(child, out))
  return out
}
