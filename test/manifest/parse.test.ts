import { getHeapSpaceStatistics, setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { describe, expect, test } from 'vitest'
import type { Node } from '../../src/manifest/ast.ts'
import { readSource } from '../../src/manifest/parse.ts'

// A route of some size, so that its tree outweighs what a parse leaves behind.
const SOURCE = Array.from(
  { length: 40 },
  (_, i) => `export async function handler${i}(req, reply) {
  const rows = await db.query('select * from items where id = $1', [req.params.id, ${i}])
  return reply.json({ items: rows.map((row) => ({ id: row.id, name: row.name, tags: row.tags.split(',') })) })
}`,
).join('\n')

setFlagsFromString('--expose-gc')
const gc = runInNewContext('gc') as (options?: { type: 'major' | 'minor'; execution: 'sync' }) => void

function oldSpaceUsed(): number {
  return getHeapSpaceStatistics().find((space) => space.space_name === 'old_space')!.space_used_size
}

/** How much the old generation grows over `files` parses and two young-generation collections. */
async function promotedBy(files: number, read: (program: Node) => unknown): Promise<number> {
  gc({ type: 'major', execution: 'sync' })
  const before = oldSpaceUsed()
  for (let i = 0; i < files; i++) {
    const outcome = await readSource(SOURCE, `src/api/route-${i}.ts`, 'ts', read)
    expect(outcome.ok).toBe(true)
  }
  // An object that lives through two young collections moves to the old generation.
  gc({ type: 'minor', execution: 'sync' })
  gc({ type: 'minor', execution: 'sync' })
  return oldSpaceUsed() - before
}

describe('parsing', () => {
  test('the reader gets the tree; a syntax error is reported with its offset instead', async () => {
    expect(await readSource('export const a = 1', 'a.ts', 'ts', (program) => program.body.length)).toEqual({ ok: true, value: 1 })
    const broken = await readSource('export const = 1', 'a.ts', 'ts', () => 'never read')
    expect(broken).toMatchObject({ ok: false, offset: 13, message: expect.stringMatching(/^syntax error: /) })
  })

  test('a tree dies young once its reader returns: scanning many files promotes none of them', async () => {
    // Past the parser's first files, which take another transfer path.
    await promotedBy(40, () => null)
    // A reader that keeps the statements keeps the whole tree: the measure of a tree that lives on.
    const kept: Node[][] = []
    const keeping = await promotedBy(60, (program) => kept.push(program.body))
    const reading = await promotedBy(60, (program) => program.body.length)
    expect(kept).toHaveLength(60)
    expect(reading).toBeLessThan(keeping / 5)
  })
})
