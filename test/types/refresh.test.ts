// `svc dev` and `svc build` keep .svc/types.d.ts in step with the app's tasks.
import { existsSync, readFileSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { buildApp } from '../../src/build/build.ts'
import { startDevServer, type DevServer } from '../../src/dev/server.ts'
import { recordingLogger, write } from '../dev/_helpers.ts'

const TASK = "export const route = { kind: 'task' } as const\nexport function POST() { return 1 }\n"

describe('.svc/types.d.ts refresh', () => {
  let root: string
  let dev: DevServer | undefined
  const types = () => readFileSync(join(root, '.svc/types.d.ts'), 'utf8')

  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'svc-types-'))
    await write(root, 'src/api/jobs/first.ts', TASK)
    await write(root, 'src/api/hello.ts', 'export function GET() { return 1 }\n')
  })
  afterEach(async () => {
    await dev?.close()
    dev = undefined
    await rm(root, { recursive: true, force: true })
  })

  it('svc dev writes it on start and again when a task is added or removed', async () => {
    dev = await startDevServer({ root, port: 0, host: '127.0.0.1', logger: recordingLogger(), watch: false })
    expect(types()).toContain('"jobs.first": {')
    expect(types()).not.toContain('hello')

    await write(root, 'src/api/jobs/second.ts', TASK)
    await dev.reload(['api/jobs/second.ts'])
    expect(types()).toContain('"jobs.second": {')

    await rm(join(root, 'src/api/jobs/first.ts'))
    await dev.reload(['api/jobs/first.ts'])
    expect(types()).not.toContain('jobs.first')
    expect(types()).toContain('"jobs.second": {')
  })

  it('svc build writes it', async () => {
    expect(existsSync(join(root, '.svc/types.d.ts'))).toBe(false)
    await buildApp({ root, target: 'node' })
    expect(types()).toContain('"jobs.first": {')
  }, 60_000)
})
