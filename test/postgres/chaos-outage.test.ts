// The chaos harness's outages (bench/_chaos), with short phases, on an
// embedded Postgres of this file's own, which it stops and starts: while
// the database is down triggers answer 503 STORE_UNAVAILABLE with
// Retry-After at once, and nothing is created after that answer; soon
// after it is back they are accepted again, and the runs that were in
// flight finish on their own. With every connection slot held, nothing
// the servers accepted is lost either. With a transaction held open, the
// row of counts every run changes gains a version per statement, not one
// per run (how much that keeps of the throughput, bench:chaos measures).
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import postgres from 'postgres'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { heldTransaction } from '../../bench/_chaos/held-transaction.ts'
import { poolExhaustion, restart } from '../../bench/_chaos/scenarios.ts'
import { type RunningPostgres, startEmbeddedPostgres } from './_embedded.ts'

const dir = mkdtempSync(join(tmpdir(), 'svc-chaos-outage-'))
const log = (line: string) => console.error(line)
let pg: RunningPostgres
beforeAll(async () => {
  // Few slots, so that holding every one of them is quick.
  pg = await startEmbeddedPostgres({ settings: { max_connections: '60' } })
}, 30_000)
afterAll(async () => {
  await pg?.stop()
  rmSync(dir, { recursive: true, force: true })
})

let databases = 0
async function database(): Promise<string> {
  const name = `chaos_${++databases}`
  const admin = postgres(pg.url, { onnotice: () => {}, max: 1 })
  await admin.unsafe(`CREATE DATABASE ${name}`)
  await admin.end()
  const url = new URL(pg.url)
  url.pathname = `/${name}`
  return url.href
}

describe('svc while its Postgres is down or full (the chaos harness, short phases)', () => {
  for (const mode of ['fast', 'immediate'] as const) {
    it(`${mode === 'fast' ? 'a fast' : 'an immediate'} shutdown: triggers answer 503 STORE_UNAVAILABLE within 2 s and create nothing, then succeed within 2 s of the restart; no run lost`, async () => {
      const result = await restart({ url: await database(), dir, log }, pg, { processes: 2, runs: 30, downMs: 2500, mode })
      expect(result.triedWhileDown).toBeGreaterThan(3)
      expect(result.unavailableWhileDown).toBe(result.triedWhileDown)
      expect(result.slowestWhileDownMs).toBeLessThan(2000)
      expect(result.createdAfterAnswer).toBe(0)
      expect(result.recoveryMs).toBeLessThan(2000)
      expect(result).toMatchObject({ lost: 0, failed: 0, stepsRunAgain: [], attemptsRunTwice: [] })
    }, 90_000)
  }

  it('a transaction held open: the counts gain a version a statement, not one a run, and no run is lost', async () => {
    const result = await heldTransaction(
      { url: await database(), dir, log },
      { processes: 2, clients: 16, baselineMs: 2000, holdMs: 4000, afterMs: 1000 },
    )
    expect(result.triggeredInHold).toBeGreaterThan(100)
    expect(result.lost).toBe(0)
    // A run is created and then finished: counted a run at a time, that made two versions of the row a run.
    expect(result.deadAtHoldEnd.run_counts ?? 0).toBeLessThan(result.triggeredInHold)
  }, 90_000)

  it('every free connection slot held: nothing accepted is lost, no task fails, and triggers answer', async () => {
    const result = await poolExhaustion({ url: await database(), dir, log }, { processes: 2, runs: 40, holdMs: 3000 })
    expect(result.held).toBeGreaterThan(0)
    expect(result.accepted).toBe(40)
    expect(result).toMatchObject({ lost: 0, failed: 0, stepsRunAgain: [], attemptsRunTwice: [] })
    expect(result.slowestWhileHeldMs).toBeLessThan(5000)
  }, 90_000)
})
