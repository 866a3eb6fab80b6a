import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { startDevServer, type DevServer } from '../../src/dev/server.ts'
import { eventually, recordingLogger, write } from './_helpers.ts'

const task = (config: string, result: number) =>
  `export const route = { kind: 'task', ${config} }\nexport async function POST() { return ${result} }\n`
const hello = (config: string, version: number) =>
  `export const route = { kind: 'serverless', ${config} }\nexport function GET() { return { version: ${version} } }\n`

describe('svc dev with a misspelled route field', () => {
  let root: string
  let dev: DevServer | undefined

  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'svc-dev-'))
    await write(root, 'src/api/jobs/send.ts', task('retries: 3', 1))
    await write(root, 'src/api/hello.ts', hello(`compute: { memory: '4gb' }`, 1))
  })
  afterEach(async () => {
    await dev?.close()
    dev = undefined
    await rm(root, { recursive: true, force: true })
  })

  const run = async () => {
    const started = await fetch(`${dev!.url}/__tasks/jobs.send`, { method: 'POST' })
    expect(started.status).toBe(202)
    const { id } = (await started.json()) as { id: string }
    return eventually(async () => {
      const body = (await (await fetch(`${dev!.url}/__tasks/${id}`)).json()) as { status: string; result: unknown }
      expect(body.status).toBe('completed')
      return body.result
    })
  }
  const hi = async () => (await (await fetch(`${dev!.url}/api/hello`)).json()) as unknown
  const served = (path: string) => dev!.app.routes.find((route) => route.path === path)

  it('prints the error at file:line:col with "did you mean", keeps serving the last good version, and recovers', async () => {
    const logger = recordingLogger()
    dev = await startDevServer({ root, port: 0, host: '127.0.0.1', logger })
    expect(dev.errors).toEqual([])
    expect(await run()).toBe(1)

    // Saved in an editor while the server runs: the watcher reloads.
    await write(root, 'src/api/jobs/send.ts', task('retires: 3', 2))
    await write(root, 'src/api/hello.ts', hello(`comptue: { memory: '4gb' }`, 2))
    const errors = [
      `src/api/hello.ts:1:44: route.comptue is not a route field; did you mean "compute"?`,
      `src/api/jobs/send.ts:1:38: route.retires is not a route field; did you mean "retries"?`,
    ]
    await eventually(async () => expect(dev!.errors.map(String)).toEqual(errors))
    for (const error of errors) expect(logger.text('error').split('\n')).toContain(error)

    // The last good module, with its last good config: three retries, not the default none.
    expect(await run()).toBe(1)
    expect(served('/api/jobs/send')).toMatchObject({ kind: 'task', retries: 3 })
    expect(await hi()).toEqual({ version: 1 })
    expect(served('/api/hello')?.compute).toEqual({ class: 'function', memory: '4gb', cpu: null })

    await write(root, 'src/api/jobs/send.ts', task('retries: 2', 3))
    await write(root, 'src/api/hello.ts', hello(`compute: { memory: '6gb' }`, 3))
    await eventually(async () => expect(await hi()).toEqual({ version: 3 }))
    expect(dev.errors).toEqual([])
    expect(await run()).toBe(3)
    expect(served('/api/jobs/send')).toMatchObject({ kind: 'task', retries: 2 })
    expect(served('/api/hello')?.compute).toEqual({ class: 'function', memory: '6gb', cpu: null })
  })

  it('does not serve a new file with a misspelled field until it is fixed', async () => {
    dev = await startDevServer({ root, port: 0, host: '127.0.0.1', logger: recordingLogger(), watch: false })
    await write(root, 'src/api/jobs/fresh.ts', task('timout: 5000', 1))
    await dev.reload(['api/jobs/fresh.ts'])
    expect(dev.errors.map(String)).toEqual([`src/api/jobs/fresh.ts:1:38: route.timout is not a route field; did you mean "timeout"?`])
    expect(served('/api/jobs/fresh')).toBeUndefined()

    await write(root, 'src/api/jobs/fresh.ts', task('timeout: 5000', 1))
    await dev.reload(['api/jobs/fresh.ts'])
    expect(dev.errors).toEqual([])
    expect(served('/api/jobs/fresh')).toMatchObject({ kind: 'task', timeout: 5000 })
  })
})
