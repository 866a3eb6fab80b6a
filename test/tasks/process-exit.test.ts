import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'

const SCRIPT = fileURLToPath(new URL('../fixtures/tasks/lingering.ts', import.meta.url))
const run = (mode: string) => spawnSync(process.execPath, [SCRIPT, mode], { encoding: 'utf8', timeout: 10_000 })

describe('pending timers and shutdown', () => {
  it('after close() a process with sleeping, delayed and scheduled work exits on its own', () => {
    const result = run('close')
    expect(result.stderr).toBe('')
    expect(result.stdout.trim()).toBe('ready')
    expect(result.status).toBe(0)
  })

  it('with unrefTimers the pending timers never keep the process alive', () => {
    const result = run('unref')
    expect(result.stdout.trim()).toBe('ready')
    expect(result.status).toBe(0)
  })

  it('without either, the sleeping run keeps the process alive (so a CLI can wait for it)', () => {
    const result = spawnSync(process.execPath, [SCRIPT, 'keep'], { encoding: 'utf8', timeout: 1500 })
    expect(result.stdout.trim()).toBe('ready')
    expect(result.signal).toBe('SIGTERM')
  })
})
