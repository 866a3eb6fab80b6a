// A run killed (SIGKILL) while it undoes its steps finishes undoing them
// after a restart: the undo that was cut off runs again, the one that had
// ended does not, and no step of the run runs again.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { firstLineOf } from './_script.ts'
import { afterAll, expect, it } from 'vitest'

const SCRIPT = fileURLToPath(new URL('../fixtures/compensation-crash/server.ts', import.meta.url))
const dir = mkdtempSync(join(tmpdir(), 'svc-compensation-crash-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
const files = ['runs.db', 'effects.txt'].map((name) => join(dir, name))

/** The child for `mode`, and its first line on stdout, parsed. */
const child = (mode: 'start' | 'resume') => firstLineOf(SCRIPT, [...files, mode])

it('finishes undoing a run after a SIGKILL cut its compensation midway, each undo done once', async () => {
  const started = await child('start')
  const { runId } = started.first as { runId: string }
  started.proc.kill('SIGKILL')
  expect((await started.exited).signal).toBe('SIGKILL')
  expect(readFileSync(files[1], 'utf8').trim().split('\n')).toEqual(['book flight', 'book hotel', 'undo hotel'])

  const resumed = await child('resume')
  expect(resumed.first).toMatchObject({
    id: runId,
    status: 'failed',
    compensation: { reason: 'failed', status: 'completed', error: 'no cars left' },
    steps: { 'compensate:hotel': { kind: 'compensation' }, 'compensate:flight': { kind: 'compensation' } },
  })
  expect((await resumed.exited).code).toBe(0)
  expect(readFileSync(files[1], 'utf8').trim().split('\n')).toEqual(['book flight', 'book hotel', 'undo hotel', 'undo flight'])
}, 60_000)
