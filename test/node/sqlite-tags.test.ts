// Run tags on a SQLite file: since schema version 16 the store writes a
// run's tag rows as it inserts the run, and triggers on delete remove them
// by primary key. A file of version 15, whose tag rows an insert trigger
// wrote, keeps finding its runs by tag once this release opens it.
import { DatabaseSync } from 'node:sqlite'
import { describe, expect, it } from 'vitest'
import { migrateSchema } from '../../src/runtime/tasks/sql/migrations.ts'
import { fileDriver, openDatabase } from '../../src/sqlite/database.ts'
import { GroupCommit } from '../../src/sqlite/group-commit.ts'
import { PendingTags } from '../../src/sqlite/pending-tags.ts'
import { makeRun } from '../tasks/store-contract.ts'
import { sqliteFiles } from './_sqlite-files.ts'

const { dbFile, store } = sqliteFiles('svc-sqlite-tags-')
const ids = (runs: { id: string }[]) => runs.map((run) => run.id)

/** The tag rows of the file, as `tag id`, by run then tag. */
function tagRows(path: string): string[] {
  const db = new DatabaseSync(path, { readOnly: true })
  try {
    return db
      .prepare('SELECT t.tag, r.id FROM svc_run_tags t LEFT JOIN svc_runs r ON r.seq = t.run_seq ORDER BY t.run_seq, t.tag')
      .all()
      .map((row) => `${row.tag} ${row.id}`)
  } finally {
    db.close()
  }
}

describe('SqliteRunStore tags', () => {
  it('writes a row per tag as it inserts a run, and none for a run without tags', async () => {
    const path = dbFile()
    const s = store(path)
    const tagged = await s.createRun(makeRun({ tags: ['tenant:a', 'plan:pro'] }))
    await s.createRun(makeRun())
    await s.close()
    expect(tagRows(path)).toEqual([`plan:pro ${tagged.id}`, `tenant:a ${tagged.id}`])
  })

  it('the tag rows of a run go with it, evicted or pruned', async () => {
    const path = dbFile()
    const s = store(path, { maxRuns: 2 })
    const finished = { status: 'completed' as const, finishedAt: '2025-01-01T00:00:00.000Z' }
    const first = await s.createRun(makeRun({ ...finished, tags: ['tenant:a'] }))
    const second = await s.createRun(makeRun({ ...finished, tags: ['tenant:a', 'plan:pro'] }))
    const third = await s.createRun(makeRun({ ...finished, tags: ['tenant:b'] }))
    expect(await s.getRun(first.id)).toBeUndefined()
    expect(await s.pruneFinished(second.taskName, '2026-01-01T00:00:00.000Z', 1)).toBe(1)
    expect(ids(await s.listRuns({ tags: ['tenant:b'] }))).toEqual([third.id])
    await s.close()
    expect(tagRows(path)).toEqual([`tenant:b ${third.id}`])
  })

  it('writes the tag rows of a batch at its commit, and none of a write undone to its savepoint or a batch rolled back', async () => {
    const path = dbFile()
    const db = openDatabase(path, 1000, 'test')
    const tags = new PendingTags()
    let failCommit = false
    const batch = new GroupCommit(db, path, {
      begin() {},
      commit() {
        tags.write((text) => db.prepare(text))
        if (failCommit) throw new Error('the commit failed')
      },
      end: (ok) => {
        if (!ok) tags.clear()
      },
      error: (error) => error,
      savepoint: () => tags.savepoint(),
      undone: () => tags.undo(),
    })
    const insert = db.prepare('INSERT INTO svc_runs (id, task_name, status, record, created_at) VALUES (?, ?, ?, ?, ?) RETURNING seq')
    const tagged = (id: string, names: string[]) => {
      const { seq } = insert.get(id, 'report', 'running', JSON.stringify({ id, tags: names }), '2025-01-01') as { seq: number }
      tags.add(names, seq)
    }
    const kept = batch.write(() => tagged('a', ['tenant:a', 'plan:pro']))
    // Inserted, then undone: its row and its tags go back, the first write's stay.
    const undone = batch.write(() => {
      tagged('b', ['tenant:b'])
      throw new Error('undo this write')
    })
    const also = batch.write(() => tagged('c', ['tenant:a']), true)
    await expect(undone).rejects.toThrow('undo this write')
    await Promise.all([kept, also])
    expect(tagRows(path)).toEqual(['plan:pro a', 'tenant:a a', 'tenant:a c'])
    // A batch whose commit fails keeps none of its tag rows, nor lets them into the next batch.
    failCommit = true
    await expect(batch.write(() => tagged('d', ['tenant:d']))).rejects.toThrow('the commit failed')
    failCommit = false
    await batch.write(() => tagged('e', ['tenant:e']))
    db.close()
    expect(tagRows(path)).toEqual(['plan:pro a', 'tenant:a a', 'tenant:a c', 'tenant:e e'])
  })

  it('a file of schema version 15 with tagged runs migrates, and finds its runs and new ones by tag', async () => {
    const path = dbFile()
    const old = [makeRun({ tags: ['tenant:a', 'plan:pro'] }), makeRun({ tags: ['tenant:b'], status: 'completed' }), makeRun()]
    const db = new DatabaseSync(path)
    migrateSchema(fileDriver(db), 'file', 'test', 15)
    // Rows as version 15 wrote them: its insert trigger writes the tag rows.
    const insert = db.prepare('INSERT INTO svc_runs (id, task_name, status, finished_seq, record, created_at) VALUES (?, ?, ?, ?, ?, ?)')
    for (const [i, run] of old.entries()) {
      insert.run(run.id, run.taskName, run.status, run.status === 'completed' ? i + 1 : null, JSON.stringify(run), run.createdAt)
    }
    db.close()
    expect(tagRows(path)).toHaveLength(3)

    const s = store(path, { maxRuns: 3 })
    expect(ids(await s.listRuns({ tags: ['tenant:a'] }))).toEqual([old[0].id])
    expect(ids(await s.listRuns({ tags: ['tenant:b'] }))).toEqual([old[1].id])
    const later = await s.createRun(makeRun({ tags: ['tenant:a'] }))
    expect(ids(await s.listRuns({ tags: ['tenant:a'] }))).toEqual([later.id, old[0].id])
    expect(ids(await s.listRuns({ tags: ['tenant:a', 'plan:pro'] }))).toEqual([old[0].id])
    // The fourth run evicted the finished one, with its tag row.
    expect(await s.getRun(old[1].id)).toBeUndefined()
    expect(await s.listRuns({ tags: ['tenant:b'] })).toEqual([])
    await s.close()
    expect(tagRows(path)).toEqual([`plan:pro ${old[0].id}`, `tenant:a ${old[0].id}`, `tenant:a ${later.id}`])
  })
})
