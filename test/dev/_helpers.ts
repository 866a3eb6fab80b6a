import { mkdir, writeFile } from 'node:fs/promises'
import { dirname, join } from 'node:path'

/** Writes an app file (relative to `root`), creating its folders. */
export async function write(root: string, file: string, contents: string): Promise<void> {
  await mkdir(dirname(join(root, file)), { recursive: true })
  await writeFile(join(root, file), contents)
}

/** Retries `check` until it stops throwing (file events and reloads are asynchronous). */
export async function eventually<T>(check: () => Promise<T>, timeoutMs = 5000): Promise<T> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    try {
      return await check()
    } catch (error) {
      if (Date.now() > deadline) throw error
      await new Promise((resolve) => setTimeout(resolve, 25))
    }
  }
}

/** A logger that keeps every line, for assertions on what the dev server printed. */
export function logs() {
  const lines: string[] = []
  const push = (...args: unknown[]) => void lines.push(args.map(String).join(' '))
  return { lines, logger: { info: push, warn: push, error: push } }
}
