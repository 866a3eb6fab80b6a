/** The svc CLI as a real child process: vitest runs on Node 24, which runs the TypeScript sources as they are. */
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'

const cli = fileURLToPath(new URL('../../src/cli/main.ts', import.meta.url))

export interface CliOutcome {
  code: number | null
  stdout: string
  stderr: string
  /** True when the process had to be killed because it did not end on its own. */
  killed: boolean
}

/**
 * Runs `svc <args>` (with `env` added to this process's environment) and resolves once the process ended and its output is read. A process
 * still up after `boundMs` is killed, so one that never ends fails the test instead of hanging it.
 */
export function svc(
  args: string[],
  { cwd, env, boundMs = 15_000 }: { cwd?: string; env?: Record<string, string>; boundMs?: number } = {},
): Promise<CliOutcome> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [cli, ...args], { cwd, env: { ...process.env, NO_COLOR: '1', ...env } })
    let stdout = ''
    let stderr = ''
    let killed = false
    const timer = setTimeout(() => {
      killed = true
      child.kill('SIGKILL')
    }, boundMs)
    child.stdout.on('data', (chunk) => (stdout += chunk))
    child.stderr.on('data', (chunk) => (stderr += chunk))
    child.on('error', (error) => {
      clearTimeout(timer)
      reject(error)
    })
    child.on('close', (code) => {
      clearTimeout(timer)
      resolve({ code, stdout, stderr, killed })
    })
  })
}
