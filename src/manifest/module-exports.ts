/**
 * What a module exports, read from its top-level statements: which names,
 * and for variables the initializer the config reader should look at.
 * `export const route = {…}`, `const route = {…}; export { route }` and
 * `export { handler as GET }` all count.
 */
import { type Node, isTypeOnlyDeclaration, isTypeOnlySpecifier, nameOf, patternNames } from './ast.ts'

export interface ExportEntry {
  /** The exported name. */
  name: string
  /** Where the export is written (for positions). */
  node: Node
  /** The declaring initializer of a variable export, if it has one in this file. */
  init: Node | null
  /** What the exported binding is. */
  binding: 'const' | 'let' | 'var' | 'function' | 'class' | 'import' | 're-export' | 'other'
}

export interface ModuleExports {
  names: Map<string, ExportEntry>
  /** `export * from '…'` statements: their exports cannot be known without reading the target. */
  starExports: Node[]
}

interface LocalBinding {
  node: Node
  init: Node | null
  binding: ExportEntry['binding']
}

export function readExports(program: Node, source: string): ModuleExports {
  const locals = new Map<string, LocalBinding>()
  for (const statement of program.body as Node[]) {
    const declaration = statement.type === 'ExportNamedDeclaration' ? statement.declaration : statement
    if (declaration) collectLocals(declaration, locals)
    if (statement.type === 'ImportDeclaration') {
      for (const specifier of statement.specifiers) locals.set(specifier.local.name, { node: specifier, init: null, binding: 'import' })
    }
  }

  const names = new Map<string, ExportEntry>()
  const starExports: Node[] = []
  for (const statement of program.body as Node[]) {
    if (statement.type === 'ExportAllDeclaration') {
      if (statement.exported) {
        const name = nameOf(statement.exported)
        if (name) names.set(name, { name, node: statement, init: null, binding: 're-export' })
      } else if (!isTypeOnlyDeclaration(statement, source)) {
        starExports.push(statement)
      }
      continue
    }
    if (statement.type === 'ExportDefaultDeclaration') {
      names.set('default', { name: 'default', node: statement, init: null, binding: 'other' })
      continue
    }
    if (statement.type !== 'ExportNamedDeclaration' || isTypeOnlyDeclaration(statement, source)) continue
    if (statement.declaration) {
      const declared = new Map<string, LocalBinding>()
      collectLocals(statement.declaration, declared)
      for (const [name, local] of declared) names.set(name, { name, ...local })
      continue
    }
    for (const specifier of statement.specifiers as Node[]) {
      if (isTypeOnlySpecifier(specifier, source)) continue
      const name = nameOf(specifier.exported)
      if (!name) continue
      if (statement.source) {
        names.set(name, { name, node: specifier, init: null, binding: 're-export' })
        continue
      }
      const local = locals.get(nameOf(specifier.local) ?? '')
      names.set(name, { name, node: specifier, init: local?.init ?? null, binding: local?.binding ?? 'other' })
    }
  }
  return { names, starExports }
}

function collectLocals(declaration: Node, into: Map<string, LocalBinding>): void {
  switch (declaration.type) {
    case 'VariableDeclaration':
      for (const declarator of declaration.declarations as Node[]) {
        const binding =
          declaration.kind === 'const' || declaration.kind === 'let' || declaration.kind === 'var' ? declaration.kind : 'other'
        if (declarator.id.type === 'Identifier') {
          into.set(declarator.id.name, { node: declarator, init: declarator.init ?? null, binding })
        } else {
          // Destructured exports have no literal of their own to read.
          for (const name of patternNames(declarator.id)) into.set(name, { node: declarator, init: null, binding })
        }
      }
      break
    case 'FunctionDeclaration':
      if (declaration.id) into.set(declaration.id.name, { node: declaration, init: null, binding: 'function' })
      break
    case 'ClassDeclaration':
      if (declaration.id) into.set(declaration.id.name, { node: declaration, init: null, binding: 'class' })
      break
  }
}
