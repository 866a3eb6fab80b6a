import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, expectTypeOf, it } from 'vitest'
import { MemoryRunStore, createTaskRuntime, type TaskRuntime, type TaskRuntimeInstance } from '../../src/index.ts'

const TASKS_DIR = join(import.meta.dirname, '../../src/runtime/tasks')

describe('public surface', () => {
  it('the svc entry exports the task functions and classes', async () => {
    const svc = await import('../../src/index.ts')
    for (const name of [
      'enqueue',
      'completeToken',
      'cancelRun',
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
      'PayloadTooLargeError',
      'StoreUnavailableError',
      'LeaseLostError',
      'DEFAULT_MAX_PAYLOAD_BYTES',
      'RunNotFoundError',
      'RunFinishedError',
      'RunCancelledError',
      'updateRun',
      'UpdateFailedError',
      'UpdateNotHandledError',
      'TooManyUpdatesError',
      'UpdateTimeoutError',
      'MAX_DELAY_SECONDS',
      'MAX_IDEMPOTENCY_KEY_LENGTH',
    ]) {
      expect(svc, name).toHaveProperty(name)
    }
  })

  it('createTaskRuntime returns the one public TaskRuntime, with every member the server, targets and CLI drive', async () => {
    const rt = createTaskRuntime({ routes: [], env: {} })
    // Checked by the type-check: no wider runtime type exists beside TaskRuntime.
    expectTypeOf(rt).toEqualTypeOf<TaskRuntime>()
    expectTypeOf<TaskRuntimeInstance>().toEqualTypeOf<TaskRuntime>()
    const methods = [
      'trigger',
      'getRun',
      'listRuns',
      'waitForRun',
      'completeToken',
      'cancel',
      'replay',
      'onRunChange',
      'listTasks',
      'runScheduled',
      'startScheduler',
      'stopScheduler',
      'scheduledJobs',
      'recover',
      'drain',
      'close',
    ] as const
    for (const name of methods) expect(typeof rt[name], name).toBe('function')
    expect(rt.tasks).toBeInstanceOf(Map)
    expect(rt.store).toBeInstanceOf(MemoryRunStore)
    await rt.close()
  })

  it('the task runtime imports no node: builtin (it runs on edge workers)', () => {
    const files = readdirSync(TASKS_DIR, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.ts'))
    expect(files.length).toBeGreaterThan(50)
    for (const file of files) {
      const source = readFileSync(join(TASKS_DIR, file), 'utf8')
      expect(source, file).not.toMatch(/from\s+['"]node:|import\(\s*['"]node:|(?<![\w#.])require\(/)
    }
  })
})
