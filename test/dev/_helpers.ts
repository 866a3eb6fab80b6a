/** Helpers of the dev server suites: app files written on disk, on top of the shared helpers. */
import { mkdir, writeFile } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { until } from '../_helpers.ts'

export { type RecordingLogger, recordingLogger, sleep, until } from '../_helpers.ts'

/** Writes an app file (relative to `root`), creating its folders. */
export async function write(root: string, file: string, contents: string): Promise<void> {
  await mkdir(dirname(join(root, file)), { recursive: true })
  await writeFile(join(root, file), contents)
}

/**
 * Retries `check` until it stops throwing (file events and reloads are asynchronous), and
 * fails with the last error it threw, so a failure shows the assertion rather than a timeout.
 */
export async function eventually<T>(check: () => Promise<T>, timeoutMs = 5000): Promise<T> {
  let last: unknown
  const attempt = async () => {
    try {
      return { value: await check() }
    } catch (error) {
      last = error
      return undefined
    }
  }
  try {
    return (await until(attempt, timeoutMs)).value
  } catch (timeout) {
    throw last ?? timeout
  }
}
