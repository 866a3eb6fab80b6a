/**
 * The samples of docs/testing.md run as the tests they are: each ```ts block
 * but the first (which loads an app from `root: '.'`) is written under
 * .tmp/ with `svcjs` pointed at the sources, and imported here, so its
 * `it(...)` is one of this file's tests. A pattern the guide shows that
 * stopped working fails here.
 */
import { mkdir, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { codeBlocks, readDoc, ROOT } from '../docs/_markdown.ts'

const dir = join(ROOT, '.tmp', 'testing-doc-samples')
await rm(dir, { recursive: true, force: true })
await mkdir(dir, { recursive: true })
const samples = codeBlocks(readDoc('docs/testing.md')).filter((block) => block.info === 'ts')
if (samples.length < 7)
  throw new Error(`docs/testing.md has ${samples.length} ts samples; this test expects the opening one and six patterns`)
for (const sample of samples.slice(1)) {
  const file = join(dir, `sample-${sample.line}.test.ts`)
  const code = sample.code
    .replaceAll("from 'svcjs/testing'", `from ${JSON.stringify(join(ROOT, 'src/testing.ts'))}`)
    .replaceAll("from 'svcjs/node'", `from ${JSON.stringify(join(ROOT, 'src/node.ts'))}`)
    .replaceAll("from 'svcjs'", `from ${JSON.stringify(join(ROOT, 'src/types.ts'))}`)
  await writeFile(file, code)
  await import(/* @vite-ignore */ file)
}
