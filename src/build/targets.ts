import { cloudflareTarget } from '../../targets/cloudflare/build.ts'
import { lambdaTarget } from '../../targets/lambda/build.ts'
import { nodeTarget } from '../../targets/node/build.ts'
import { vercelTarget } from '../../targets/vercel/build.ts'
import type { TargetDescriptor, TargetName } from './target.ts'

/** Every build target by name. */
export const TARGETS: Record<TargetName, TargetDescriptor> = {
  node: nodeTarget,
  cloudflare: cloudflareTarget,
  lambda: lambdaTarget,
  vercel: vercelTarget,
}
