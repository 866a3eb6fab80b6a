/** A crash test's child process: a script run by this Node to its end, or to the kill -9 it gives itself. */
import { type ChildProcessByStdio, spawn } from 'node:child_process'
import { createInterface } from 'node:readline'
import type { Readable } from 'node:stream'

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

/**
 * Starts `script` with `args`, its stderr shown, and resolves once it
 * printed its first line on stdout: the process, its end, and that line
 * parsed as JSON. Rejects when it ends before printing one.
 */
export async function firstLineOf(
  script: string,
  args: readonly string[],
): Promise<{ proc: ChildProcessByStdio<null, Readable, null>; exited: Promise<ProcessEnd>; first: any }> {
  const proc = spawn(process.execPath, [script, ...args], { stdio: ['ignore', 'pipe', 'inherit'] })
  const exited = new Promise<ProcessEnd>((resolve) => proc.once('exit', (code, signal) => resolve({ code, signal })))
  const [line] = await Promise.race([
    createInterface({ input: proc.stdout })
      [Symbol.asyncIterator]()
      .next()
      .then((next) => [next.value as string]),
    exited.then((end) => {
      throw new Error(`${script} ${args.join(' ')} ended first: ${JSON.stringify(end)}`)
    }),
  ])
  return { proc, exited, first: JSON.parse(line) }
}

/** How a child process ended. */
export interface ProcessEnd {
  code: number | null
  signal: NodeJS.Signals | null
}
