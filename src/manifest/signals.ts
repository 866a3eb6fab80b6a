/**
 * Static signals for the advisor, read from a route's syntax tree; the code
 * is never run. Each signal names its line, so a reason can be checked.
 * The walk, its scopes and what it reports at the end are here; the
 * checks it makes at a call or a `new` are in signal-calls.ts.
 *
 * - a `websocket` export;
 * - listening sockets: `net`/`http`/`https`/`http2`/`tls` servers, `dgram`
 *   sockets and `ws` servers, through default, namespace or named imports
 *   and `require()`;
 * - code that runs at module load and keeps going: `setInterval` (also as
 *   `for await` over `timers/promises`), a `setTimeout` that re-arms the
 *   function it is in, endless `while (true)`/`for (;;)` loops, including
 *   inside IIFEs and top-level functions called at load;
 * - module-scope mutable state (`let`/`var`, or a Map, Set, array or object
 *   held in a `const`) changed inside a function: state that outlives a
 *   request only in a persistent process;
 * - imports (static, dynamic, `require`) of Node built-ins, native add-ons
 *   and heavy packages.
 */
import { type Node, blockNames, forEachChild, identifiersIn, isFunction, nameOf, patternNames, requiredModule, rootName } from './ast.ts'
import { functionsRunAtLoad, isAlwaysTrue } from './load-code.ts'
import { type AddSignal, bodiesCanSignal, checkCall, checkWebSocketServer, isPromisesInterval, type Walk } from './signal-calls.ts'
import { type ImportBinding, readTopLevel } from './top-level.ts'
import type { Locator } from './location.ts'
import { isNodeBuiltin, moduleProfile } from './modules.ts'
import type { ModuleExports } from './module-exports.ts'
import type { RouteSignal } from './types.ts'

export interface SourceSignals {
  signals: RouteSignal[]
  /** Every module the file loads at runtime, in source order. */
  imports: string[]
}

export function detectSignals(program: Node, source: string, exports: ModuleExports, locate: Locator): SourceSignals {
  const signals: RouteSignal[] = []
  const add: AddSignal = (kind, node, message, extra) => {
    const { line, column } = locate(node.start)
    signals.push({ kind, message: message(line), line, column, ...extra })
  }

  const websocket = exports.names.get('websocket')
  if (websocket) {
    add(
      'websocket',
      websocket.node,
      (line) => `exports websocket (line ${line}): it holds a WebSocket open per connection, which needs a persistent process`,
    )
  }

  const { imports, functions, state, importedModules } = readTopLevel(program, source)
  const atLoad = functionsRunAtLoad(program, functions)
  const walkAllBodies = bodiesCanSignal(source, imports, state)

  // The main walk.
  const scopes: Set<string>[] = []
  // Identifiers tested by enclosing conditions in the current function.
  let guards: Set<string>[] = []
  const mutated = new Map<string, { node: Node; where: string | null }>()
  let loadCode = true
  let functionName: string | null = null
  // The innermost named function, for a setTimeout that re-arms it.
  let innerName: string | null = null

  const shadowed = (name: string) => scopes.some((scope) => scope.has(name))
  const moduleImport = (node: Node): ImportBinding | undefined => {
    if (node.type === 'Identifier' && !shadowed(node.name)) return imports.get(node.name)
    const required = requiredModule(node)
    return required ? { source: required, imported: '*' } : undefined
  }
  const recordMutation = (name: string | undefined, node: Node, reassignment: boolean) => {
    if (loadCode || name === undefined || mutated.has(name) || shadowed(name)) return
    const binding = state.get(name)
    if (!binding || (reassignment && !binding.reassignable)) return
    // `if (!client) client = connect()` and `client ??= connect()` initialize lazily; that is not state.
    if (reassignment && guards.some((guard) => guard.has(name))) return
    mutated.set(name, { node, where: functionName })
  }

  // What the checks of a call read (signal-calls.ts): the walk where it stands.
  const walk: Walk = {
    get loadCode() {
      return loadCode
    },
    get innerName() {
      return innerName
    },
    imports,
    importedModules,
    shadowed,
    moduleImport,
    recordMutation,
    add,
  }

  const visitFunction = (node: Node, runsAtLoad: boolean, name: string | null) => {
    if (!runsAtLoad && !walkAllBodies) return
    const saved = { loadCode, functionName, innerName }
    loadCode = runsAtLoad
    functionName ??= name
    innerName = name
    const params = new Set<string>()
    if (node.type === 'FunctionExpression' && node.id) params.add(node.id.name)
    for (const param of node.params as Node[]) for (const n of patternNames(param)) params.add(n)
    scopes.push(params)
    const savedGuards = guards
    guards = []
    for (const param of node.params as Node[]) visit(param)
    if (node.body) visit(node.body)
    guards = savedGuards
    scopes.pop()
    loadCode = saved.loadCode
    functionName = saved.functionName
    innerName = saved.innerName
  }

  const visit = (node: Node): void => {
    switch (node.type) {
      case 'FunctionDeclaration':
      case 'FunctionExpression':
      case 'ArrowFunctionExpression':
        visitFunction(node, atLoad.has(node), node.id?.name ?? null)
        return
      case 'VariableDeclarator':
        if (node.init && isFunction(node.init)) {
          visit(node.id)
          visitFunction(node.init, atLoad.has(node.init), node.id.type === 'Identifier' ? node.id.name : null)
          return
        }
        break
      case 'Property':
      case 'MethodDefinition':
        if (isFunction(node.value)) {
          visitFunction(node.value, false, nameOf(node.key) ?? null)
          return
        }
        break
      case 'BlockStatement':
      case 'StaticBlock':
        scopes.push(blockNames(node.body))
        forEachChild(node, visit)
        scopes.pop()
        return
      case 'SwitchStatement':
        scopes.push(blockNames((node.cases as Node[]).flatMap((c) => c.consequent)))
        forEachChild(node, visit)
        scopes.pop()
        return
      case 'ForStatement':
      case 'ForInStatement':
      case 'ForOfStatement': {
        const head = node.type === 'ForStatement' ? node.init : node.left
        scopes.push(new Set(head?.type === 'VariableDeclaration' ? blockNames([head]) : []))
        if (loadCode && node.type === 'ForStatement' && node.test === null) {
          add(
            'background-loop',
            node,
            (line) => `runs an endless for (;;) loop at module load (line ${line}): background work needs an always-on process`,
          )
        }
        // `for await (const _ of setInterval(ms))` from timers/promises is setInterval as a loop.
        if (loadCode && node.type === 'ForOfStatement' && node.await && isPromisesInterval(node.right, walk)) {
          add(
            'module-timer',
            node,
            (line) =>
              `iterates setInterval from timers/promises at module scope (line ${line}): the timer runs between requests, which a function freezes or discards`,
          )
        }
        forEachChild(node, visit)
        scopes.pop()
        return
      }
      case 'CatchClause':
        scopes.push(new Set(patternNames(node.param)))
        forEachChild(node, visit)
        scopes.pop()
        return
      case 'WhileStatement':
      case 'DoWhileStatement':
        if (loadCode && isAlwaysTrue(node.test)) {
          add(
            'background-loop',
            node,
            (line) => `runs an endless while loop at module load (line ${line}): background work needs an always-on process`,
          )
        }
        break
      case 'IfStatement':
      case 'ConditionalExpression': {
        visit(node.test)
        guards.push(new Set(identifiersIn(node.test)))
        visit(node.consequent)
        if (node.alternate) visit(node.alternate)
        guards.pop()
        return
      }
      case 'LogicalExpression': {
        visit(node.left)
        guards.push(new Set(identifiersIn(node.left)))
        visit(node.right)
        guards.pop()
        return
      }
      case 'CallExpression': {
        checkCall(node, walk)
        // An IIFE at load runs at load.
        const callee = node.callee
        if (isFunction(callee)) {
          visitFunction(callee, loadCode, null)
          for (const argument of node.arguments as Node[]) visit(argument)
          return
        }
        break
      }
      case 'NewExpression':
        checkWebSocketServer(node, walk)
        break
      case 'ImportExpression':
        if (node.source.type === 'Literal' && typeof node.source.value === 'string') {
          importedModules.push({ specifier: node.source.value, node })
        }
        break
      case 'AssignmentExpression':
        if (node.left.type === 'Identifier') {
          const lazy = node.operator === '??=' || node.operator === '||='
          if (!lazy) recordMutation(node.left.name, node, true)
        } else {
          recordMutation(rootName(node.left), node, false)
        }
        break
      case 'UpdateExpression':
        if (node.argument.type === 'Identifier') recordMutation(node.argument.name, node, true)
        else recordMutation(rootName(node.argument), node, false)
        break
      case 'UnaryExpression':
        if (node.operator === 'delete') recordMutation(rootName(node.argument), node, false)
        break
    }
    forEachChild(node, visit)
  }

  for (const statement of program.body as Node[]) visit(statement)

  for (const [name, { node, where }] of mutated) {
    const binding = state.get(name)!
    const declared = locate(binding.node.start).line
    const inside = where ? `inside ${where}` : 'inside a function'
    add(
      'mutable-state',
      node,
      (line) =>
        `module-scope ${name} (${binding.describe}, line ${declared}) is changed ${inside} (line ${line}): that state lives only as long as one process`,
    )
  }

  const seen = new Set<string>()
  for (const { specifier, node } of importedModules) {
    if (seen.has(specifier)) continue
    seen.add(specifier)
    const profile = moduleProfile(specifier)
    if (profile?.memory) {
      add(
        'heavy-module',
        node,
        (line) => `imports ${specifier} (line ${line}), ${profile.label} that needs at least ${profile.memory} of function memory`,
        { module: specifier, memory: profile.memory },
      )
    } else if (profile?.native) {
      add('native-module', node, (line) => `imports ${specifier} (line ${line}), ${profile.label} that only Node can load`, {
        module: specifier,
      })
    } else if (isNodeBuiltin(specifier)) {
      add('node-builtin', node, (line) => `imports the Node built-in ${specifier} (line ${line})`, { module: specifier })
    }
  }

  signals.sort((a, b) => a.line - b.line || a.column - b.column)
  return { signals, imports: [...seen] }
}
