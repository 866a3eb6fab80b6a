import { describe, expect, it } from 'vitest'
import { createSvcHandler } from '../../src/index.ts'
import { startSvcServer } from '../../src/node.ts'
import type { RuntimeApiRoute } from '../../src/types.ts'

const quiet = { info() {}, warn() {}, error() {} }
const routes: RuntimeApiRoute[] = [
  { path: '/api/quick', module: { kind: 'task', POST: async () => 'done' } },
  {
    path: '/api/napper',
    module: {
      kind: 'task',
      POST: async (ctx: any) => {
        await ctx.step.sleep('long-nap', 3600)
        return 'woke'
      },
    },
  },
]
const post = (name: string) => new Request(`http://localhost/__tasks/${name}`, { method: 'POST' })

describe('runs and waitUntil', () => {
  it('hands a started run to waitUntil until it settles, for platforms that freeze after the response', async () => {
    const handler = createSvcHandler({ routes, env: { NODE_ENV: 'test' }, logger: quiet })
    const held: Promise<unknown>[] = []
    const res = await handler.fetch(post('quick'), { remoteAddress: '127.0.0.1', waitUntil: (p) => void held.push(p) })
    expect(res.status).toBe(202)
    expect(held).toHaveLength(1)
    await held[0]
    const { id } = (await res.json()) as { id: string }
    expect((await handler.runtime.getRun(id))?.status).toBe('completed')
  })

  it('holds nothing with holdRuns: false', async () => {
    const handler = createSvcHandler({ routes, env: { NODE_ENV: 'test' }, logger: quiet, holdRuns: false })
    const held: Promise<unknown>[] = []
    const res = await handler.fetch(post('quick'), { remoteAddress: '127.0.0.1', waitUntil: (p) => void held.push(p) })
    expect(res.status).toBe(202)
    expect(held).toHaveLength(0)
  })

  it('rejects a holdRuns that is not a boolean', () => {
    expect(() => createSvcHandler({ routes, holdRuns: 'yes' as never })).toThrow(
      'createSvcHandler(): holdRuns must be a boolean (got "yes")',
    )
  })

  it('startSvcServer closes without waiting for a suspended run to finish', async () => {
    const server = await startSvcServer({
      apiRoutes: routes,
      pages: [],
      port: 0,
      host: '127.0.0.1',
      shutdownTimeoutMs: 60_000,
      logger: quiet,
    })
    const res = await fetch(`http://127.0.0.1:${server.port}/__tasks/napper`, { method: 'POST' })
    const { id } = (await res.json()) as { id: string }
    for (let i = 0; i < 100 && (await server.runtime.getRun(id))?.status !== 'suspended'; i++) await new Promise((r) => setTimeout(r, 10))
    expect((await server.runtime.getRun(id))?.status).toBe('suspended')
    // Without the fix close() waited for the run until the 60 s drain deadline.
    const outcome = await Promise.race([
      server.close().then(() => 'closed'),
      new Promise((r) => setTimeout(() => r('still waiting'), 5000)),
    ])
    expect(outcome).toBe('closed')
  })
})
