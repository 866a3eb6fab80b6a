// The data chunks of a run (`ctx.stream`) on a SqliteRunStore: they are in
// the file once sent, they outlive the store and the runtime that wrote
// them, and the run resumed by another runtime on the same file goes on
// after them without sending any twice.
import { describe, expect, it } from 'vitest'
import { createTaskRuntime } from '../../src/runtime/tasks/index.ts'
import { tokenIdFor } from '../../src/index.ts'
import type { RunRecord, TaskContext } from '../../src/types.ts'
import { recordingLogger } from '../_helpers.ts'
import { finished, task, until } from '../tasks/_helpers.ts'
import { sqliteFiles } from './_sqlite-files.ts'

const { dbFile, store, raw } = sqliteFiles('svc-sqlite-chunks-')

const said = (run: RunRecord | undefined) => (run?.chunks?.kept ?? []).map((chunk) => `${chunk.seq}:${chunk.name}:${chunk.data}`)

const routes = [
  task('write', async (ctx: TaskContext) => {
    await ctx.stream('text', 'a')
    await ctx.stream('text', 'b')
    await ctx.step.waitForToken('go')
    await ctx.stream('text', 'c')
    return 'written'
  }),
]

describe('chunks on a SqliteRunStore', () => {
  it('keeps a run’s chunks across closing and opening the store again, and the resumed run sends none twice', async () => {
    const path = dbFile()
    const first = store(path)
    const before = createTaskRuntime({ routes, store: first, logger: recordingLogger(), env: {} })
    const { id } = await before.trigger('write')
    await until(async () => (await before.getRun(id))?.status === 'suspended')
    await before.close()
    await first.close()

    // Another connection reads them from the file.
    const row = raw(path).prepare('SELECT record FROM svc_runs WHERE id = ?').get(id) as { record: string }
    expect(said(JSON.parse(row.record) as RunRecord)).toEqual(['1:text:a', '2:text:b'])

    const second = store(path)
    expect(said(await second.getRun(id))).toEqual(['1:text:a', '2:text:b'])
    const after = createTaskRuntime({ routes, store: second, logger: recordingLogger(), env: {} })
    try {
      await after.recover()
      expect(await after.completeToken(tokenIdFor(id, 'go'))).toBe('completed')
      const done = await finished(after.waitForRun(id))
      expect(done.status).toBe('completed')
      expect(said(done)).toEqual(['1:text:a', '2:text:b', '3:text:c'])
      expect(done.chunks?.calls).toBe(3)
    } finally {
      await after.close()
    }
  })
})
