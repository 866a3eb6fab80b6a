import { fileURLToPath } from 'node:url'
import { Miniflare } from 'miniflare'
import { describe, expect, it } from 'vitest'
import { bundle } from '../../src/build/bundle.ts'

const entry = fileURLToPath(new URL('../../src/index.ts', import.meta.url))

describe('the svc entry is edge-safe', () => {
  it('bundles for workers without a single Node builtin', async () => {
    const { code, nodeImports } = await bundle({ input: entry, platform: 'worker', minify: false })
    expect(nodeImports).toEqual([])
    expect(code).not.toMatch(/from\s*["']node:/)
  })

  it('rejects a worker bundle that imports a Node builtin, naming the importer', async () => {
    const input = '/virtual/uses-fs.ts'
    await expect(
      bundle({ input, entrySource: `import { readFileSync } from 'node:fs'\nexport default readFileSync`, platform: 'worker' }),
    ).rejects.toThrow(/node:fs \(imported by \/virtual\/uses-fs\.ts\)/)
  })

  it('loads and runs inside workerd', async () => {
    const { code } = await bundle({ input: entry, platform: 'worker' })
    const mf = new Miniflare({
      modulesRoot: '/',
      modules: [
        {
          type: 'ESModule',
          path: '/worker.mjs',
          contents: `import * as svc from './svc.mjs'
export default { async fetch() { return Response.json(Object.keys(svc).sort()) } }`,
        },
        { type: 'ESModule', path: '/svc.mjs', contents: code },
      ],
      compatibilityDate: '2025-09-01',
    })
    try {
      const res = await mf.dispatchFetch('http://localhost/')
      const names = (await res.json()) as string[]
      expect(names).toContain('defineSchema')
      expect(names).toContain('ValidationError')
    } finally {
      await mf.dispose()
    }
  })
})
