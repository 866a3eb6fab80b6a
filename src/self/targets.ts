/**
 * svc's deployment targets, and the subpath each target's runtime entry is
 * published at: pure data, read by the build, the CLI, svc's own package
 * entries (./entries.ts) and build.config.ts.
 */

/**
 * Every deployment target, and the one list of them. `targets/<name>/` holds
 * a target whole: `build.ts` exports its `TargetDescriptor` as `<name>Target`,
 * and `runtime.ts` is its runtime entry, published as `svcjs/<name>`. The
 * target type, the build's loader, the CLI's `--target`, svc's aliases (./entries.ts)
 * and build.config.ts derive from this list; package.json `exports` and
 * tsconfig.json `paths`, which cannot import it, are checked against it by
 * test/build/target-lists.test.ts.
 */
export const TARGET_NAMES = ['node', 'cloudflare', 'lambda', 'vercel', 'bun', 'deno'] as const

export type TargetName = (typeof TARGET_NAMES)[number]

/** The subpath of svc a target's runtime entry is published at, and its file name in `dist/`. */
export type TargetEntry<Name extends TargetName = TargetName> = Name extends 'node' ? 'node-target' : Name

/** `<name>`, except `node-target` for node: `svcjs/node` is the Node server's API. */
export function targetEntry<Name extends TargetName>(name: Name): TargetEntry<Name> {
  return (name === 'node' ? 'node-target' : name) as TargetEntry<Name>
}
