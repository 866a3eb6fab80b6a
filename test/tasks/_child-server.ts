// A server process a test drives, on any store that processes share: a
// fixture script that prints `{ ready }` once it listens, takes JSON lines
// `{ id, op, ... }` on stdin and answers `{ id, result }` or `{ id, error }`
// on stdout (see test/fixtures/postgres-cluster/_ops.ts). Every one still
// alive after a test is killed.
import { type ChildProcess, spawn } from 'node:child_process'
import { afterEach } from 'vitest'
import { until } from './_helpers.ts'

export interface ChildServer {
  pid: number
  call<T = unknown>(op: string, args?: Record<string, unknown>): Promise<T>
  kill(): Promise<void>
  /** Closes the server and its store, as a graceful shutdown does. */
  close(): Promise<void>
}

const started: ChildProcess[] = []
afterEach(() => {
  for (const child of started.splice(0)) child.kill('SIGKILL')
})

export async function startChild(script: string, args: string[], env: NodeJS.ProcessEnv = process.env): Promise<ChildServer> {
  const child = spawn(process.execPath, [script, ...args], { env, stdio: ['pipe', 'pipe', 'pipe'] })
  started.push(child)
  let log = ''
  let buffer = ''
  let ready = false
  let calls = 0
  const pending = new Map<number, { resolve(value: unknown): void; reject(error: Error): void }>()
  child.stderr!.on('data', (chunk) => (log += chunk))
  child.stdout!.on('data', (chunk) => {
    buffer += chunk
    let newline: number
    while ((newline = buffer.indexOf('\n')) >= 0) {
      const message = JSON.parse(buffer.slice(0, newline))
      buffer = buffer.slice(newline + 1)
      if ('ready' in message) ready = true
      const call = pending.get(message.id)
      if (!call) continue
      pending.delete(message.id)
      if ('error' in message) call.reject(new Error(message.error))
      else call.resolve(message.result)
    }
  })
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  await until(() => {
    if (!ready && child.exitCode !== null) throw new Error(`the server exited before it was ready:\n${log}`)
    return ready
  }, 15_000)
  const call = <T>(op: string, args: Record<string, unknown> = {}) => {
    const id = ++calls
    return new Promise<T>((resolve, reject) => {
      pending.set(id, { resolve: resolve as (value: unknown) => void, reject })
      child.stdin!.write(`${JSON.stringify({ id, op, ...args })}\n`)
    })
  }
  return {
    pid: child.pid!,
    call,
    async kill() {
      child.kill('SIGKILL')
      await exited
    },
    async close() {
      await call('close')
      child.kill('SIGKILL')
      await exited
    },
  }
}
