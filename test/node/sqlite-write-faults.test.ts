import { describe, expect, it } from 'vitest'
import type { RunRecord, TaskContext } from '../../src/types.ts'
import { deferred, runtime, task, until } from '../tasks/_helpers.ts'
import { onFile, sqliteFiles } from './_sqlite-files.ts'

const { dbFile, store, raw, storeAndConnection } = sqliteFiles('svc-sqlite-write-faults-')

describe('SQLite write faults do not lose runs', () => {
  it('a sleep whose timer write the file refuses for a while wakes once the write goes through, its recorded step not run again', async () => {
    const path = dbFile()
    const s = store(path)
    onFile(
      path,
      `CREATE TABLE fault (on_ INTEGER NOT NULL); INSERT INTO fault VALUES (1);
       CREATE TRIGGER refuse_timers BEFORE INSERT ON svc_timers WHEN (SELECT on_ FROM fault) = 1
       BEGIN SELECT RAISE(ABORT, 'timers are refused'); END;`,
    )
    const ran: string[] = []
    const rt = runtime(
      [
        task('nap', async (ctx: TaskContext) => {
          await ctx.step.run('a', () => void ran.push('a'))
          await ctx.step.sleep('nap', 0.05)
          await ctx.step.run('b', () => void ran.push('b'))
          return 'awake'
        }),
      ],
      { store: s },
    )
    const { id } = await rt.trigger('nap')
    await until(() => rt.logger.text().includes('could not record the wait of step "nap"'))
    expect((await s.getRun(id))?.status).toBe('suspended')
    onFile(path, 'UPDATE fault SET on_ = 0')
    await until(async () => (await s.getRun(id))?.status === 'completed', 10_000)
    expect((await s.getRun(id))?.result).toBe('awake')
    expect(ran).toEqual(['a', 'b'])
  })

  it('while another process holds the write lock, an attempt whose step cannot be saved is interrupted, and finishes as the same attempt once the lock is gone', async () => {
    const path = dbFile()
    const s = store(path, { busyTimeoutMs: 100 })
    const gate = deferred()
    const attempts: number[] = []
    const rt = runtime(
      [
        task('work', async (ctx: TaskContext) => {
          attempts.push(ctx.attempt)
          const out = await ctx.step.run('a', async () => {
            await gate.promise
            return 'A'
          })
          return out
        }),
      ],
      { store: s },
    )
    const { id } = await rt.trigger('work')
    await until(() => attempts.length === 1)
    const other = raw(path)
    other.exec('BEGIN IMMEDIATE')
    gate.resolve()
    await until(() => rt.logger.text().includes('could not serve the attempt'))
    // Nothing of the attempt was recorded: the run is still running, with no failed attempt.
    expect((await s.getRun(id))?.status).toBe('running')
    other.exec('COMMIT')
    const done = (await until(async () => {
      const run = await s.getRun(id)
      return run?.status === 'completed' && run
    }, 10_000)) as RunRecord
    expect(done.result).toBe('A')
    // The interrupted attempt counted as no retry: one attempt recorded, the one that completed, numbered 1.
    expect(done.attempts.map((attempt) => attempt.index)).toEqual([1])
    expect(attempts).toEqual([1, 1])
  })

  it('with the disk full, a run whose end cannot be written keeps its result and writes it once there is room', async () => {
    const path = dbFile()
    const { store: s, db } = storeAndConnection(path)
    const gate = deferred()
    let calls = 0
    const rt = runtime(
      [
        task('big', async () => {
          calls++
          await gate.promise
          return 'x'.repeat(300_000)
        }),
      ],
      { store: s },
    )
    const { id } = await rt.trigger('big')
    await until(() => calls === 1)
    const { page_count } = db.prepare('PRAGMA page_count').get() as { page_count: number }
    db.exec(`PRAGMA max_page_count = ${page_count}`)
    gate.resolve()
    await until(() => rt.logger.text().includes('could not record its end'))
    expect((await s.getRun(id))?.status).toBe('running')
    db.exec('PRAGMA max_page_count = 4294967294')
    await until(async () => (await s.getRun(id))?.status === 'completed', 10_000)
    const done = await s.getRun(id)
    expect(typeof done?.result === 'string' && done.result.length).toBe(300_000)
    // The handler ran once: its result waited in memory for the room.
    expect(calls).toBe(1)
  })
})
