import { cp, mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

/**
 * A fresh copy of a fixture app (the targets app unless named) in a temp dir,
 * so builds never write into the repository.
 */
export async function copyFixtureApp(name = 'targets-app'): Promise<{ root: string; cleanup: () => Promise<void> }> {
  const root = await mkdtemp(join(tmpdir(), 'svc-targets-'))
  await cp(fileURLToPath(new URL(`../fixtures/${name}`, import.meta.url)), root, { recursive: true })
  return { root, cleanup: () => rm(root, { recursive: true, force: true }) }
}

/** Polls a run until it leaves `running`/`scheduled`. */
export async function pollRun(get: (id: string) => Promise<Response>, id: string, timeoutMs = 5000): Promise<any> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const res = await get(id)
    const run = (await res.json()) as { status: string }
    if (run.status !== 'running' && run.status !== 'scheduled') return run
    if (Date.now() > deadline) throw new Error(`run ${id} still ${run.status} after ${timeoutMs} ms`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}
