// globalSetup of the `package` vitest project: svc is packed once (its
// prepack script builds dist/) for every test file of the project. Two
// files packing at once would each rebuild dist/ under the other.
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { TestProject } from 'vitest/node'
import { pack } from './_packed.ts'

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const dir = await mkdtemp(join(tmpdir(), 'svc-pack-'))
  project.provide('svcPack', await pack(dir))
  return () => rm(dir, { recursive: true, force: true })
}

declare module 'vitest' {
  export interface ProvidedContext {
    svcPack: { tarball: string; files: string[]; builds: number }
  }
}
