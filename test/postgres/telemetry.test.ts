// One trace per run across two processes on Postgres: a server started with
// the docs' OpenTelemetry setup creates a run and its first execution, and
// is killed (SIGKILL) while the run sleeps; another server on the same
// database resumes it, and its execution continues the trace the run kept.
// The second server starts only once the first is dead, and the sleep is
// long enough that the first cannot resume the run itself on a slow
// machine: which process runs each execution is fixed, not raced.
import postgres from 'postgres'
import { expect, it } from 'vitest'
import type { RunRecord } from '../../src/types.ts'
import { until } from '../_helpers.ts'
import { attribute, otlpReceiver, tracedServer } from '../telemetry/_otlp.ts'
import { createDatabase } from './_pg.ts'

it("a run resumed by another process after the first is killed continues the run's trace", async () => {
  const storeUrl = await createDatabase('telemetry')
  const receiver = await otlpReceiver()
  const first = await tracedServer(receiver.endpoint('first'), { SVC_STORE_URL: storeUrl })
  const auth = { authorization: 'Bearer s' }

  const res = await fetch(`${first.url}/__tasks/jobs.report`, {
    method: 'POST',
    headers: { ...auth, 'content-type': 'application/json' },
    body: JSON.stringify({ sleep: 4 }),
  })
  const { id } = (await res.json()) as { id: string }
  const ofRun = (from?: string) =>
    receiver.spans.filter((span) => attribute(span, 'svc.run.id') === id && (from === undefined || span.from === from))
  // The first execution suspended on the sleep, and its spans reached the receiver.
  await until(() => ofRun('first').some((span) => span.name === 'process jobs.report'), 15_000)
  const created = ofRun('first').find((span) => span.name === 'create jobs.report')!
  // Killed once the attempt is over and its lease given up: a process killed
  // before that leaves the run to others only once its lease lapses (30 s).
  const db = postgres(storeUrl, { onnotice: () => {} })
  try {
    await until(
      async () => (await db`SELECT 1 FROM svc.runs WHERE id = ${id} AND status = 'suspended' AND lease_owner IS NULL`).length === 1,
      15_000,
    )
  } finally {
    await db.end()
  }
  first.child.kill('SIGKILL')
  const second = await tracedServer(receiver.endpoint('second'), { SVC_STORE_URL: storeUrl })

  const done = await until(async () => {
    const run = (await (await fetch(`${second.url}/__tasks/${id}`, { headers: auth })).json()) as RunRecord
    return run.status === 'completed' ? run : undefined
  }, 20_000)
  expect(done.result).toBe(`rows: 42, rendered by ${second.child.pid}`)
  await until(
    () => ofRun('second').filter((span) => span.name === 'process jobs.report' || span.name === 'step render').length === 2,
    15_000,
  )
  const executions = ofRun().filter((span) => span.name === 'process jobs.report')
  expect(executions.map((span) => span.from)).toEqual(['first', 'second'])
  for (const span of [...executions, ...ofRun('second')]) {
    expect(span.traceId).toBe(created.traceId)
  }
  for (const execution of executions) expect(execution.parentSpanId).toBe(created.spanId)
}, 60_000)
