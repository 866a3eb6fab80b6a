/**
 * Which code runs when a module loads: top-level statements, IIFEs among
 * them, and top-level functions those call, transitively. A timer or an
 * endless loop there keeps working after any request has ended.
 */
import { type Node, forEachChild, isFunction } from './ast.ts'

/** Top-level functions that run when the module loads: called from load code, transitively. */
export function functionsRunAtLoad(program: Node, functions: Map<string, Node>): Set<Node> {
  const running = new Set<Node>()
  const queue: Node[] = []
  const scan = (node: Node) => {
    if (isFunction(node)) return
    if (node.type === 'CallExpression') {
      if (node.callee.type === 'Identifier') {
        const fn = functions.get(node.callee.name)
        if (fn && !running.has(fn)) {
          running.add(fn)
          queue.push(fn)
        }
      } else if (isFunction(node.callee) && node.callee.body) {
        scan(node.callee.body)
      }
    }
    forEachChild(node, scan)
  }
  for (const statement of program.body as Node[]) {
    const declaration = statement.type === 'ExportNamedDeclaration' ? statement.declaration : statement
    if (declaration && !isFunction(declaration)) scan(declaration)
  }
  while (queue.length > 0) {
    const fn = queue.pop()!
    if (fn.body) scan(fn.body)
  }
  return running
}

/** `while (true)`, `while (1)`, `do … while (!0)`. */
export function isAlwaysTrue(test: Node): boolean {
  if (test.type === 'Literal') return Boolean(test.value)
  if (test.type === 'UnaryExpression' && test.operator === '!' && test.argument.type === 'Literal') return !test.argument.value
  return false
}
