// The chaos harness's backend kills, crash, retry storm and priority
// starvation (bench/_chaos), with short phases, against svc server
// processes on the run's embedded Postgres: nothing the servers accepted
// is lost, no task fails for the database's fault, no recorded step runs
// again, no attempt runs twice, and no priority starves.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { priorityStarvation } from '../../bench/_chaos/priority.ts'
import { backendKills, crashRecovery, retryStorm } from '../../bench/_chaos/scenarios.ts'
import { createDatabase } from './_pg.ts'

const dir = mkdtempSync(join(tmpdir(), 'svc-chaos-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
const log = (line: string) => console.error(line)

describe('svc under database faults (the chaos harness, short phases)', () => {
  it('backends terminated twice a second while runs are triggered: none lost or failed, no recorded step runs again, and triggers answer in time after', async () => {
    const url = await createDatabase('chaos_kills')
    const result = await backendKills({ url, dir, log }, { processes: 2, runs: 60, killForMs: 3000, everyMs: 250 })
    expect(result.killed).toBeGreaterThan(0)
    expect(result.accepted).toBe(80)
    expect(result).toMatchObject({ lost: 0, failed: 0, stepsRunAgain: [], attemptsRunTwice: [], refusedAfter: 0 })
    expect(result.slowestAfterMs).toBeLessThan(1000)
  }, 60_000)

  it('one of three processes killed (kill -9) with runs in flight: the others finish every run, and no recorded step runs again', async () => {
    const url = await createDatabase('chaos_crash')
    const result = await crashRecovery({ url, dir, log }, { processes: 3, runs: 60 })
    expect(result.begunInKilled).toBeGreaterThan(0)
    expect(result).toMatchObject({ accepted: 60, lost: 0, failed: 0, stepsRunAgain: [], attemptsRunTwice: [] })
  }, 90_000)

  it('a retry storm across three processes: every run takes exactly its three attempts, none twice', async () => {
    const url = await createDatabase('chaos_storm')
    const result = await retryStorm({ url, dir, log }, { processes: 3, runs: 300 })
    expect(result).toMatchObject({ accepted: 300, lost: 0, failed: 0, attemptsRunTwice: [], wrongAttempts: 0 })
  }, 90_000)

  it('runs of priority 0 behind a sustained load of priority 1, sent faster than the task starts them: aging starts them all while the load lasts', async () => {
    const url = await createDatabase('chaos_priority')
    // With aging at 1 point a second (the default), a run of priority 0
    // ranks with new runs of priority 1 after 1 s: it waits behind the
    // hundred or so sent before then, however long the load goes on.
    const loadMs = 25_000
    const result = await priorityStarvation({ url, dir, log }, { processes: 2, lows: 20, highPerSecond: 100, loadMs, highPriority: 1 })
    expect(result.lowsDone).toBe(20)
    expect(result.allLowsDoneMs).toBeLessThan(loadMs)
    // The load outlasted them: high-priority runs still waited when the last low one was done.
    expect(result.highsQueuedAtEnd).toBeGreaterThan(0)
  }, 60_000)
})
