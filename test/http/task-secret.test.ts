import { describe, expect, it, vi } from 'vitest'
import { createSvcHandler, type RuntimeApiRoute } from '../../src/index.ts'
import { recordingLogger } from '../tasks/_helpers.ts'

const routes: RuntimeApiRoute[] = []
const list = (env: Record<string, string>, authorization: string) =>
  createSvcHandler({ routes, env: { NODE_ENV: 'production', ...env }, logger: recordingLogger() }).fetch(
    new Request('http://svc/__tasks', { headers: { authorization } }),
  )

describe('the task secret', () => {
  it('is SVC_TASK_SECRET, which wins over its alias THEN_TASK_SECRET', async () => {
    const both = { SVC_TASK_SECRET: 'primary', THEN_TASK_SECRET: 'alias' }
    expect((await list(both, 'Bearer primary')).status).toBe(200)
    expect((await list(both, 'Bearer alias')).status).toBe(401)
  })

  it('is THEN_TASK_SECRET when SVC_TASK_SECRET is unset or empty', async () => {
    expect((await list({ THEN_TASK_SECRET: 'alias' }, 'Bearer alias')).status).toBe(200)
    expect((await list({ SVC_TASK_SECRET: '', THEN_TASK_SECRET: 'alias' }, 'Bearer alias')).status).toBe(200)
    expect((await list({ THEN_TASK_SECRET: 'alias' }, 'Bearer other')).status).toBe(401)
  })

  it('notes the alias once per process, naming the variable to set', async () => {
    vi.resetModules()
    const { taskSecret } = await import('../../src/runtime/rules.ts')
    const warnings: string[] = []
    const warn = (message: string) => warnings.push(message)
    expect(taskSecret({ SVC_TASK_SECRET: 'primary' }, warn)).toBe('primary')
    expect(warnings).toEqual([])
    expect(taskSecret({ THEN_TASK_SECRET: 'alias' }, warn)).toBe('alias')
    expect(taskSecret({ THEN_TASK_SECRET: 'alias' }, warn)).toBe('alias')
    expect(warnings).toEqual([
      '[svc] THEN_TASK_SECRET is read as SVC_TASK_SECRET, an alias kept for older deployments: rename the variable to SVC_TASK_SECRET',
    ])
  })

  it('says when the alias is ignored because both are set', async () => {
    vi.resetModules()
    const { taskSecret } = await import('../../src/runtime/rules.ts')
    const warnings: string[] = []
    expect(taskSecret({ SVC_TASK_SECRET: 'primary', THEN_TASK_SECRET: 'alias' }, (m) => warnings.push(m))).toBe('primary')
    expect(warnings).toEqual(['[svc] THEN_TASK_SECRET is ignored, since SVC_TASK_SECRET is set: remove THEN_TASK_SECRET'])
  })
})
