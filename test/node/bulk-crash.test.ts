// A bulk cancel cut short by SIGKILL loses nothing: of the runs a tag
// finds, the ones cancelled before the kill stay cancelled, the others still
// sleep, and the same call sent after a restart cancels exactly those. No
// run is lost, none of another tag is touched, and no recorded step runs
// again.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, expect, it } from 'vitest'
import type { BulkResult } from '../../src/runtime/admin/bulk-runs.ts'
import type { RunRecord } from '../../src/types.ts'
import { runScript } from './_script.ts'

const SCRIPT = fileURLToPath(new URL('../fixtures/bulk-crash/child.ts', import.meta.url))
const dir = mkdtempSync(join(tmpdir(), 'svc-bulk-crash-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
const [db, effects, out] = ['runs.db', 'effects.txt', 'out.json'].map((name) => join(dir, name))

const child = (mode: 'fill' | 'cancel' | 'finish') => runScript(SCRIPT, [db, effects, out, mode], 60_000)

it('cancels, after a SIGKILL mid-call and the same call again, every run of the tag once, and nothing else', async () => {
  const filled = await child('fill')
  expect(filled.code, filled.out).toBe(0)
  const cut = await child('cancel')
  expect(cut.signal, cut.out).toBe('SIGKILL')
  const finished = await child('finish')
  expect(finished.code, finished.out).toBe(0)

  const { answer, runs } = JSON.parse(readFileSync(out, 'utf8')) as { answer: BulkResult; runs: RunRecord[] }
  expect(runs).toHaveLength(320)
  const crash = runs.filter((run) => run.tags?.includes('tenant:crash'))
  const keep = runs.filter((run) => run.tags?.includes('tenant:keep'))
  expect(crash).toHaveLength(300)
  expect(crash.every((run) => run.status === 'cancelled')).toBe(true)
  expect(keep.map((run) => run.status)).toEqual(Array(20).fill('suspended'))
  // The call after the restart found only what the cut call had not cancelled, and cancelled each.
  expect(answer.matched).toBeGreaterThan(0)
  expect(answer.matched).toBeLessThanOrEqual(200)
  expect(answer.runs.every((item) => item.outcome === 'cancelled')).toBe(true)
  expect(answer.cursor).toBeUndefined()
  // Each run recorded its step once, across the three processes.
  const ran = readFileSync(effects, 'utf8').trim().split('\n')
  expect(ran).toHaveLength(320)
  expect(new Set(ran).size).toBe(320)
}, 120_000)
