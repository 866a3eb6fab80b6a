/** A crash test's child process: a script run by this Node to its end, or to the kill -9 it gives itself. */
import { spawn } from 'node:child_process'

export interface ScriptEnd {
  code: number | null
  signal: NodeJS.Signals | null
  /** What it wrote to stdout and stderr. */
  out: string
}

/** Runs `script` with `args` to its end, killing it (SIGKILL) past `timeoutMs`, and resolves with how it ended. */
export function runScript(script: string, args: readonly string[], timeoutMs = 20_000): Promise<ScriptEnd> {
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, [script, ...args], { stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    proc.stdout.on('data', (chunk) => (out += chunk))
    proc.stderr.on('data', (chunk) => (out += chunk))
    const timer = setTimeout(() => proc.kill('SIGKILL'), timeoutMs)
    proc.once('error', reject)
    proc.once('exit', (code, signal) => {
      clearTimeout(timer)
      resolve({ code, signal, out })
    })
  })
}
