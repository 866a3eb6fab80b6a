import type { Node } from './ast.ts'

/** Where per-file checks send what they find. */
export interface Reporter {
  /** A config error at `node`. */
  error(node: Node, message: string): void
  /** A warning about the route; it does not fail a build. */
  warn(message: string): void
}
