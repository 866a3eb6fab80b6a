import { TARGET_NAMES } from '../self/targets.ts'
import type { TargetDescriptor, TargetName } from './target.ts'

export { TARGET_NAMES }

/** Whether `name` names a target, for input such as `--target`. */
export function isTargetName(name: string): name is TargetName {
  return (TARGET_NAMES as readonly string[]).includes(name)
}

/**
 * A target's build step, which `targets/<name>/build.ts` exports as
 * `<name>Target`. The file is found from the name, so a target is its folder
 * plus its name in `TARGET_NAMES`, and a build loads only its own target.
 * build.config.ts hands the bundler of `dist/` the same files, one per name,
 * since a bundler cannot follow an import whose path is computed.
 */
export async function loadTarget(name: TargetName): Promise<TargetDescriptor> {
  const module: Record<string, TargetDescriptor | undefined> = await import(`../../targets/${name}/build.ts`)
  const target = module[`${name}Target`]
  if (target?.name !== name) throw new TypeError(`targets/${name}/build.ts must export ${name}Target, a TargetDescriptor named "${name}"`)
  return target
}
