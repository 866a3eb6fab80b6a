// Wake and cancel survive a kill: a process wakes a run sleeping a day and
// cancels a parent with the child it waits on, then dies by SIGKILL before
// the woken run goes on. A new process on the same SQLite file finishes the
// woken run at once, without running its recorded step again, and finds the
// parent and its child cancelled, the child's later step never run. A run
// replayed from a step just before the kill finishes after it, with the
// steps before that one kept and not run again.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, expect, it } from 'vitest'
import type { RunRecord } from '../../src/types.ts'
import { runScript } from './_script.ts'

const SCRIPT = fileURLToPath(new URL('../fixtures/wake-crash/child.ts', import.meta.url))
const dir = mkdtempSync(join(tmpdir(), 'svc-wake-crash-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const child = (mode: 'wake' | 'resume') => runScript(SCRIPT, [join(dir, 'runs.db'), join(dir, 'effects.log'), join(dir, 'ids.json'), mode])

it('keeps a wake, a cancel and a replay from a step made just before a SIGKILL, and runs no recorded step again', async () => {
  const first = await child('wake')
  expect(first.signal, first.out).toBe('SIGKILL')
  const began = Date.now()
  const second = await child('resume')
  expect(second.code, second.out).toBe(0)
  // Woken: done at once on restart, not a day later.
  expect(Date.now() - began).toBeLessThan(15_000)

  const {
    child: childId,
    cancelledWith,
    records,
  } = JSON.parse(readFileSync(join(dir, 'ids.json'), 'utf8')) as {
    child: string
    cancelledWith: string[]
    records: Record<'napper' | 'parent' | 'child' | 'broken' | 'mended', RunRecord>
  }
  expect(cancelledWith).toEqual([childId])
  expect(records.napper).toMatchObject({ status: 'completed', result: { a: 'napper-a', b: 'napper-b' } })
  expect(records.parent.status).toBe('cancelled')
  expect(records.child.status).toBe('cancelled')
  // Replayed from b: a kept as the failed run recorded it, b run on restart.
  expect(records.mended).toMatchObject({ status: 'completed', replayOf: records.broken.id, result: { a: 'mender-a', b: 'mender-b' } })
  expect(records.mended.steps.a).toEqual(records.broken.steps.a)
  // Each step body ran once across both processes (mender-a for the failed run only); the cancelled child's never did.
  expect(readFileSync(join(dir, 'effects.log'), 'utf8').split('\n').filter(Boolean).sort()).toEqual([
    'mender-a',
    'mender-b',
    'napper-a',
    'napper-b',
  ])
}, 60_000)
