// On Lambda and Vercel runs live in the instance's memory: each shim says so
// once, at start, when the app has tasks, and says how durable runs are had.
import { describe, expect, it } from 'vitest'
import { createTaskRuntime } from '../../src/runtime/tasks/index.ts'
import { createLambdaHandler } from '../../targets/lambda/runtime.ts'
import { createVercelHandler } from '../../targets/vercel/runtime.ts'
import { recordingLogger, task } from '../tasks/_helpers.ts'

const shims = [
  ['lambda', 'Lambda', createLambdaHandler],
  ['vercel', 'Vercel', createVercelHandler],
] as const

describe.each(shims)('the %s shim and its run store', (_name, platform, create) => {
  it('warns once at start that runs are per instance, and that SVC_STORE_URL with a postgres:// URL makes them shared', () => {
    const logger = recordingLogger()
    create({ routes: [task('jobs.a', () => 1), task('jobs.b', () => 2)], logger })
    const warnings = logger.lines.filter((line) => line.level === 'warn')
    expect(warnings).toHaveLength(1)
    const message = warnings[0].text
    expect(message).toContain(`${platform}: task runs are kept in this function instance, per instance`)
    expect(message).toContain('set SVC_STORE_URL to a postgres:// URL')
    expect(message).toMatch(/one-minute tick/)
  })

  it('says nothing for an app without tasks, or with a runtime of its own', () => {
    const logger = recordingLogger()
    create({ routes: [{ path: '/api/hello', module: { GET: () => 'hi' } }], logger })
    const routes = [task('jobs.a', () => 1)]
    create({ routes, runtime: createTaskRuntime({ routes, logger }), logger })
    expect(logger.lines.filter((line) => line.level === 'warn')).toEqual([])
  })
})
