import { spawn, spawnSync } from 'node:child_process'
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

  it('retention rounds never keep the process alive', () => {
    const retained = fileURLToPath(new URL('../fixtures/tasks/retained.ts', import.meta.url))
    const result = spawnSync(process.execPath, [retained], { encoding: 'utf8', timeout: 10_000 })
    expect(result.stderr).toBe('')
    expect(result.stdout.trim()).toBe('ready')
    expect(result.status).toBe(0)
  })

  it('without either, the sleeping run keeps the process alive (so a CLI can wait for it)', async () => {
    const child = spawn(process.execPath, [SCRIPT, 'keep'], { stdio: ['ignore', 'pipe', 'inherit'] })
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve))
    try {
      // However long the start takes on a loaded machine, it is alive a second after it is ready.
      let stdout = ''
      await new Promise<void>((resolve, reject) => {
        child.stdout.on('data', (chunk) => {
          stdout += chunk
          if (stdout.includes('ready')) resolve()
        })
        exited.then(() => reject(new Error(`it exited before it was ready: ${stdout}`)))
      })
      const outcome = await Promise.race([exited.then(() => 'exited'), new Promise((resolve) => setTimeout(() => resolve('alive'), 1000))])
      expect(outcome).toBe('alive')
    } finally {
      child.kill('SIGKILL')
      await exited
    }
  }, 20_000)
})
