/**
 * A SQLite file that cannot be used right now is 503 STORE_UNAVAILABLE on
 * every runtime the SQLite store runs on, whether or not the runtime's
 * node:sqlite says which result code an error has: Deno's leaves `errcode`
 * off the errors of DatabaseSync#exec. test/fixtures/sqlite-errors/main.ts
 * raises real errors with each runtime's own binary.
 */
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { beforeAll, describe, expect, it } from 'vitest'
import { runtimeBinary } from '../targets/_server-runtime.ts'

const SCRIPT = fileURLToPath(new URL('../fixtures/sqlite-errors/main.ts', import.meta.url))

interface Outcome {
  unavailable: boolean
  code: string
  status: number | null
  message: string
  mayEndTransaction: boolean
}

type Outcomes = Record<'locked' | 'full' | 'duplicate', Outcome>

const RUNTIMES = {
  node: () => [process.execPath, SCRIPT],
  bun: () => [runtimeBinary('bun'), SCRIPT],
  // This repository's node_modules holds nothing the script needs, and Deno should not look for it.
  deno: () => [runtimeBinary('deno'), 'run', '--allow-all', '--no-config', SCRIPT],
}

function run([command, ...args]: string[]): Promise<Outcomes> {
  const child = spawn(command, args, { env: { ...process.env, NO_COLOR: '1' }, stdio: ['ignore', 'pipe', 'pipe'] })
  let output = ''
  child.stdout!.on('data', (chunk) => (output += chunk))
  child.stderr!.on('data', (chunk) => (output += chunk))
  return new Promise((resolve, reject) =>
    child.once('exit', (code) => {
      if (code !== 0) return reject(new Error(`${command} exited with ${code}:\n${output}`))
      resolve(JSON.parse(output.trim().split('\n').at(-1)!))
    }),
  )
}

for (const [runtime, command] of Object.entries(RUNTIMES)) {
  describe(`SQLite errors on ${runtime}`, () => {
    let outcomes: Outcomes
    beforeAll(async () => {
      outcomes = await run(command())
    })

    it('a write lock held past busyTimeoutMs is STORE_UNAVAILABLE, 503, naming SQLITE_BUSY', () => {
      expect(outcomes.locked).toMatchObject({ unavailable: true, code: 'STORE_UNAVAILABLE', status: 503, mayEndTransaction: true })
      expect(outcomes.locked.message).toMatch(/locked by another connection.*SQLITE_BUSY: database is locked/)
    })

    it('a file that may not grow is STORE_UNAVAILABLE, 503, naming SQLITE_FULL', () => {
      expect(outcomes.full).toMatchObject({ unavailable: true, code: 'STORE_UNAVAILABLE', status: 503, mayEndTransaction: true })
      expect(outcomes.full.message).toMatch(/the database file is full \(SQLITE_FULL: database or disk is full\)/)
    })

    it('any other error is left as SQLite raised it', () => {
      expect(outcomes.duplicate).toMatchObject({ unavailable: false, code: 'ERR_SQLITE_ERROR', mayEndTransaction: false })
    })
  })
}
