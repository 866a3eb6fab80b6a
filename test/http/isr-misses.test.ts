import { describe, expect, it } from 'vitest'
import { createSvcHandler } from '../../src/index.ts'
import type { RuntimePage } from '../../src/types.ts'

const quiet = { info() {}, warn() {}, error() {} }
const tick = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

function hybridPage(render: () => Promise<string | Response>): RuntimePage {
  return { path: '/', mode: 'hybrid', revalidate: 60, tags: [], module: { default: render, page: { mode: 'hybrid', revalidate: 60 } } }
}

describe('ISR misses', () => {
  it('concurrent requests for an uncached page share one render', async () => {
    let renders = 0
    const page = hybridPage(async () => {
      renders++
      await tick(30)
      return `<p>render ${renders}</p>`
    })
    const handler = createSvcHandler({ routes: [], pages: [page], logger: quiet })
    const responses = await Promise.all(Array.from({ length: 5 }, () => handler.fetch(new Request('http://localhost/'))))
    const bodies = await Promise.all(responses.map((res) => res.text()))
    expect(renders).toBe(1)
    expect(new Set(bodies)).toEqual(new Set(['<p>render 1</p>']))
    expect(responses.map((res) => res.headers.get('x-svc-cache'))).toEqual(['MISS', 'MISS', 'MISS', 'MISS', 'MISS'])
    expect((await handler.fetch(new Request('http://localhost/'))).headers.get('x-svc-cache')).toBe('HIT')
  })

  it('when the shared render fails, the waiting requests render for themselves', async () => {
    let renders = 0
    const page = hybridPage(async () => {
      renders++
      await tick(20)
      if (renders === 1) throw new Error('first render fails')
      return '<p>ok</p>'
    })
    const handler = createSvcHandler({ routes: [], pages: [page], logger: quiet })
    const statuses = await Promise.all(
      Array.from({ length: 3 }, () => handler.fetch(new Request('http://localhost/')).then((res) => res.status)),
    )
    expect(statuses.filter((status) => status === 500)).toHaveLength(1)
    expect(statuses.filter((status) => status === 200)).toHaveLength(2)
  })

  it('an uncacheable render is not shared', async () => {
    let renders = 0
    const page = hybridPage(async () => {
      renders++
      await tick(20)
      return new Response('private', { headers: { 'cache-control': 'no-store' } })
    })
    const handler = createSvcHandler({ routes: [], pages: [page], logger: quiet })
    const bodies = await Promise.all(
      Array.from({ length: 3 }, () => handler.fetch(new Request('http://localhost/')).then((res) => res.text())),
    )
    expect(bodies).toEqual(['private', 'private', 'private'])
    expect(renders).toBeGreaterThan(1)
  })
})
