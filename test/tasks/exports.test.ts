import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'

const TASKS_DIR = join(import.meta.dirname, '../../src/runtime/tasks')

describe('public surface', () => {
  it('the svc entry exports the task functions and classes', async () => {
    const svc = await import('../../src/index.ts')
    for (const name of [
      'enqueue',
      'completeToken',
      'runScheduledTasks',
      'createTaskRuntime',
      'MemoryRunStore',
      'setActiveTaskRuntime',
      'getActiveTaskRuntime',
      'isSuspension',
      'tokenIdFor',
      'DuplicateStepKeyError',
      'HttpError',
      'StoreFullError',
      'MAX_DELAY_SECONDS',
      'MAX_IDEMPOTENCY_KEY_LENGTH',
    ]) {
      expect(svc, name).toHaveProperty(name)
    }
  })

  it('the task runtime imports no node: builtin (it runs on edge workers)', () => {
    const files = readdirSync(TASKS_DIR).filter((f) => f.endsWith('.ts'))
    expect(files.length).toBeGreaterThan(10)
    for (const file of files) {
      const source = readFileSync(join(TASKS_DIR, file), 'utf8')
      expect(source, file).not.toMatch(/from\s+['"]node:|import\(\s*['"]node:|(?<![\w#.])require\(/)
    }
  })
})
