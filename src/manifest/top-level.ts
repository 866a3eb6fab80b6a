/**
 * A module's top-level bindings, as the advisor needs them: what each
 * import binds, which functions are declared, which bindings could hold
 * state (`let`/`var`, or a Map, Set, array or object in a `const`), and
 * which modules are loaded.
 */
import { type Node, isFunction, isTypeOnlyDeclaration, isTypeOnlySpecifier, nameOf } from './ast.ts'

const CONTAINER_CLASSES = new Set(['Map', 'Set', 'WeakMap', 'WeakSet', 'Array'])

export interface ImportBinding {
  source: string
  /** `default`, `*` or the imported name. */
  imported: string
}

export interface StateBinding {
  name: string
  describe: string
  node: Node
  /** `let`/`var` bindings change by reassignment too; `const` containers only through their contents. */
  reassignable: boolean
}

export interface TopLevel {
  /** Local name to the import it binds. Type-only imports are left out. */
  imports: Map<string, ImportBinding>
  /** Top-level functions by name, declared or assigned to a variable. */
  functions: Map<string, Node>
  /** Bindings that could hold state, by name. */
  state: Map<string, StateBinding>
  /** Modules loaded by import and re-export statements, in order. */
  importedModules: { specifier: string; node: Node }[]
}

export function readTopLevel(program: Node, source: string): TopLevel {
  const imports = new Map<string, ImportBinding>()
  const functions = new Map<string, Node>()
  const state = new Map<string, StateBinding>()
  const importedModules: { specifier: string; node: Node }[] = []
  for (const statement of program.body as Node[]) {
    if (statement.type === 'ImportDeclaration') {
      if (isTypeOnlyDeclaration(statement, source)) continue
      const specifiers = (statement.specifiers as Node[]).filter((s) => !isTypeOnlySpecifier(s, source))
      if (statement.specifiers.length > 0 && specifiers.length === 0) continue
      importedModules.push({ specifier: statement.source.value, node: statement })
      for (const s of specifiers) {
        const imported =
          s.type === 'ImportDefaultSpecifier' ? 'default' : s.type === 'ImportNamespaceSpecifier' ? '*' : (nameOf(s.imported) ?? '')
        imports.set(s.local.name, { source: statement.source.value, imported })
      }
      continue
    }
    if ((statement.type === 'ExportNamedDeclaration' || statement.type === 'ExportAllDeclaration') && statement.source) {
      if (!isTypeOnlyDeclaration(statement, source)) importedModules.push({ specifier: statement.source.value, node: statement })
      continue
    }
    const declaration =
      statement.type === 'ExportNamedDeclaration' || statement.type === 'ExportDefaultDeclaration' ? statement.declaration : statement
    if (!declaration) continue
    if (declaration.type === 'FunctionDeclaration' && declaration.id) functions.set(declaration.id.name, declaration)
    if (declaration.type !== 'VariableDeclaration') continue
    for (const declarator of declaration.declarations as Node[]) {
      if (declarator.id.type !== 'Identifier') continue
      const name = declarator.id.name
      const init = declarator.init
      if (init && isFunction(init)) {
        functions.set(name, init)
        if (declaration.kind === 'const') continue
      }
      if (declaration.kind !== 'const') {
        state.set(name, { name, describe: `${declaration.kind} binding`, node: declarator, reassignable: true })
      } else if (init) {
        const container = containerOf(init)
        if (container) state.set(name, { name, describe: container, node: declarator, reassignable: false })
      }
    }
  }

  return { imports, functions, state, importedModules }
}

function containerOf(init: Node): string | undefined {
  if (init.type === 'ArrayExpression') return 'an array'
  if (init.type === 'ObjectExpression') return 'an object'
  if (init.type === 'NewExpression' && init.callee.type === 'Identifier' && CONTAINER_CLASSES.has(init.callee.name)) {
    return `a ${init.callee.name}`
  }
  return undefined
}
