/**
 * The checks the signal walk (signals.ts) makes at a call or a `new`:
 * listening sockets (`createServer()` of a built-in, a `ws` server), timers
 * started at load (`setInterval`, also as `for await` over
 * `timers/promises`, and a `setTimeout` that re-arms its function),
 * mutating calls on module state, and `require()`. Each reads the walk's
 * state where it stands (`Walk`) and reports through it.
 */
import { forEachChild, isFunction, memberName, type Node, requiredModule, rootName } from './ast.ts'
import { builtinName } from './modules.ts'
import type { ImportBinding } from './top-level.ts'
import type { RouteSignal } from './types.ts'

/** Reports a signal at `node`; `message` is given its line. */
export type AddSignal = (kind: RouteSignal['kind'], node: Node, message: (line: number) => string, extra?: Partial<RouteSignal>) => void

/** The signal walk where it stands, as the checks of a call read it. */
export interface Walk {
  /** Whether the code walked runs at module load. */
  readonly loadCode: boolean
  /** The innermost named function, for a setTimeout that re-arms it. */
  readonly innerName: string | null
  /** The file's imports, by local name. */
  readonly imports: Map<string, ImportBinding>
  /** Every module the file loads at runtime, in source order, as the walk finds them. */
  readonly importedModules: { specifier: string; node: Node }[]
  /** Whether a local binding of the current scopes hides `name`. */
  shadowed(name: string): boolean
  /** The import `node` names (an identifier or a `require()`), if any. */
  moduleImport(node: Node): ImportBinding | undefined
  /** Notes a change to module state `name` inside a function. */
  recordMutation(name: string | undefined, node: Node, reassignment: boolean): void
  add: AddSignal
}

/** Socket factories per built-in module (without `node:`). */
const SERVER_FACTORIES: Record<string, readonly string[]> = {
  net: ['createServer'],
  http: ['createServer'],
  https: ['createServer'],
  http2: ['createServer', 'createSecureServer'],
  tls: ['createServer'],
  dgram: ['createSocket'],
}
const WS_SERVER_CLASSES = new Set(['WebSocketServer', 'Server'])
const MUTATING_METHODS = new Set([
  'set',
  'add',
  'delete',
  'clear',
  'push',
  'pop',
  'shift',
  'unshift',
  'splice',
  'sort',
  'reverse',
  'fill',
  'copyWithin',
])
const GLOBAL_OBJECTS = new Set(['globalThis', 'global', 'window', 'self'])

export function checkCall(node: Node, walk: Walk): void {
  const callee = node.callee
  const required = requiredModule(node)
  if (required && !walk.shadowed('require')) walk.importedModules.push({ specifier: required, node })

  // Servers: createServer(), http.createServer(), require('net').createServer().
  let factory: { module: string; name: string } | undefined
  if (callee.type === 'Identifier') {
    const binding = walk.moduleImport(callee)
    if (binding) factory = { module: binding.source, name: binding.imported }
  } else if (callee.type === 'MemberExpression') {
    const binding = walk.moduleImport(callee.object)
    const property = memberName(callee)
    if (binding && property && (binding.imported === 'default' || binding.imported === '*'))
      factory = { module: binding.source, name: property }
  }
  if (factory && SERVER_FACTORIES[builtinName(factory.module)]?.includes(factory.name)) {
    const label = `${builtinName(factory.module)}.${factory.name}`
    walk.add(
      'listening-socket',
      node,
      (line) =>
        `creates a listening socket with ${label}() (line ${line}): a server must stay up between requests, which needs a persistent process`,
      { module: factory.module },
    )
  }

  // Timers started at load keep running after a request ends.
  if (walk.loadCode && isGlobalCall(callee, 'setInterval', walk)) {
    walk.add(
      'module-timer',
      node,
      (line) => `starts setInterval at module scope (line ${line}): the timer runs between requests, which a function freezes or discards`,
    )
  }
  // A function run at load that hands itself to setTimeout again is setInterval by another name.
  const self = walk.innerName
  if (walk.loadCode && self !== null && isGlobalCall(callee, 'setTimeout', walk) && rearms(node.arguments[0], self)) {
    walk.add(
      'module-timer',
      node,
      (line) =>
        `re-arms setTimeout with ${self}() from module load (line ${line}): the timer runs between requests, which a function freezes or discards`,
    )
  }

  // Mutating calls on module state: rooms.set(), queue.push(), rooms.get(id).add().
  if (callee.type === 'MemberExpression') {
    const method = memberName(callee)
    if (method && MUTATING_METHODS.has(method)) walk.recordMutation(rootName(callee.object), node, false)
  }
}

export function isPromisesInterval(node: Node, walk: Walk): boolean {
  if (node.type !== 'CallExpression') return false
  const callee = node.callee
  const fromPromises = (binding: ImportBinding | undefined) => !!binding && /^(node:)?timers\/promises$/.test(binding.source)
  if (callee.type === 'Identifier') {
    const binding = walk.moduleImport(callee)
    return fromPromises(binding) && binding!.imported === 'setInterval'
  }
  if (callee.type !== 'MemberExpression' || memberName(callee) !== 'setInterval') return false
  const binding = walk.moduleImport(callee.object)
  return fromPromises(binding) && (binding!.imported === 'default' || binding!.imported === '*')
}

export function checkWebSocketServer(node: Node, walk: Walk): void {
  const callee = node.callee
  let isServer = false
  if (callee.type === 'Identifier') {
    const binding = walk.moduleImport(callee)
    isServer = binding?.source === 'ws' && binding.imported === 'WebSocketServer'
  } else if (callee.type === 'MemberExpression') {
    const binding = walk.moduleImport(callee.object)
    isServer = binding?.source === 'ws' && WS_SERVER_CLASSES.has(memberName(callee) ?? '')
  }
  if (isServer) {
    walk.add(
      'listening-socket',
      node,
      (line) => `creates a ws WebSocket server (line ${line}): open connections need a persistent process`,
      {
        module: 'ws',
      },
    )
  }
}

/**
 * Whether code that does not run at load can add a signal. Outside load
 * code only four things do: `require()`, `import()`, a call or `new` through
 * an import of a socket module (a server), and a change to module state.
 * A file with none of them needs only its load code walked, which for most
 * routes leaves out every handler body. Identifiers written with `\u`
 * escapes could hide a name from the text tests, so such a file is walked
 * whole.
 */
export function bodiesCanSignal(source: string, imports: Map<string, ImportBinding>, state: Map<string, unknown>): boolean {
  if (state.size > 0 || /\brequire\b|\bimport\s*(?:\(|\/[*/])|\\u/.test(source)) return true
  for (const { source: specifier } of imports.values()) {
    if (specifier === 'ws' || SERVER_FACTORIES[builtinName(specifier)]) return true
  }
  return false
}

/** Whether a timer callback calls `name` again: `setTimeout(tick)`, `setTimeout(() => tick())`. */
function rearms(callback: Node | undefined, name: string): boolean {
  if (!callback) return false
  if (callback.type === 'Identifier') return callback.name === name
  if (!isFunction(callback)) return false
  let found = false
  const search = (node: Node) => {
    if (found || isFunction(node)) return
    if (node.type === 'CallExpression' && node.callee.type === 'Identifier' && node.callee.name === name) found = true
    else forEachChild(node, search)
  }
  search(callback.body)
  return found
}

function isGlobalCall(callee: Node, name: string, walk: Walk): boolean {
  if (callee.type === 'Identifier') {
    if (callee.name === name && !walk.shadowed(name) && !walk.imports.has(name)) return true
    const binding = walk.imports.get(callee.name)
    return !!binding && !walk.shadowed(callee.name) && /^(node:)?timers$/.test(binding.source) && binding.imported === name
  }
  return (
    callee.type === 'MemberExpression' &&
    callee.object.type === 'Identifier' &&
    GLOBAL_OBJECTS.has(callee.object.name) &&
    memberName(callee) === name
  )
}
