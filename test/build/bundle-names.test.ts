// A built bundle is minified, and svc's errors name themselves after their
// class (`SvcError` sets `name` from `new.target`): the minifier must keep
// class names, or a built worker logs `v: …` where it means `StoreFullError: …`.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { afterAll, describe, expect, it } from 'vitest'
import { bundle } from '../../src/build/bundle.ts'

const dir = mkdtempSync(join(tmpdir(), 'svc-bundle-names-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
const errors = pathToFileURL(join(import.meta.dirname, '../../src/runtime/errors.ts')).href

describe('minified bundles', () => {
  it.each(['worker', 'node'] as const)('keep the names of svc error classes on %s', async (platform) => {
    const outFile = join(dir, `${platform}.mjs`)
    await bundle({
      input: join(dir, `entry-${platform}.ts`),
      entrySource: `import { StoreFullError, LeaseLostError } from ${JSON.stringify(errors)}\nexport const names = [new StoreFullError('s', 1).name, new LeaseLostError('r').name]\n`,
      platform,
      outFile,
    })
    const { names } = (await import(pathToFileURL(outFile).href)) as { names: string[] }
    expect(names).toEqual(['StoreFullError', 'LeaseLostError'])
  })
})
