/**
 * The native WebSocket load generator of `bench/http.ts` (bench/ws-load.c),
 * compiled on first use with the system's C compiler.
 *
 * The binary goes to node_modules/.cache/svc-bench/, named by a hash of the
 * source, so an edited source is compiled again (and the older binaries
 * removed) and an unchanged one never is. Without `cc`, or when compiling fails, the caller gets the reason and
 * falls back to the Node client.
 */
import { execFileSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

const SOURCE = fileURLToPath(new URL('./ws-load.c', import.meta.url))
const CACHE_DIR = fileURLToPath(new URL('../node_modules/.cache/svc-bench/', import.meta.url))

export type NativeClient = { binary: string } | { unavailable: string }

/** The path of the compiled client, or why there is none. */
export function nativeWsClient(): NativeClient {
  const hash = createHash('sha256').update(readFileSync(SOURCE)).digest('hex').slice(0, 16)
  const binary = `${CACHE_DIR}ws-load-${hash}`
  if (existsSync(binary)) return { binary }
  try {
    execFileSync('sh', ['-c', 'command -v cc'], { stdio: 'ignore' })
  } catch {
    return { unavailable: 'no C compiler (`cc`) found; install one with `apt-get install gcc` (Debian, Ubuntu)' }
  }
  mkdirSync(CACHE_DIR, { recursive: true })
  // Compiled under a temporary name and renamed, so a run cut short leaves no half-written binary.
  const partial = `${binary}.${process.pid}.tmp`
  try {
    execFileSync('cc', ['-O2', '-o', partial, SOURCE], { stdio: ['ignore', 'ignore', 'pipe'] })
  } catch (error) {
    const stderr = String((error as { stderr?: Buffer }).stderr ?? error).trim()
    return { unavailable: `\`cc -O2 ${SOURCE}\` failed:\n${stderr}` }
  }
  for (const old of readdirSync(CACHE_DIR))
    if (old.startsWith('ws-load-') && !old.endsWith('.tmp')) rmSync(`${CACHE_DIR}${old}`, { force: true })
  renameSync(partial, binary)
  return { binary }
}
