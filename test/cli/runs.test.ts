import { spawn } from 'node:child_process'
import { createServer } from 'node:net'
import { fileURLToPath } from 'node:url'
import { beforeEach, describe, expect, it } from 'vitest'
import { MemoryRunStore } from '../../src/index.ts'
import { describeRunRecord } from '../../src/cli/runs-timeline.ts'
import { formatInstant } from '../../src/cli/runs-format.ts'
import type { RunRecord } from '../../src/types.ts'
import { until } from '../_helpers.ts'
import { fixtureServerPerTest } from './_svc.ts'

const cli = fileURLToPath(new URL('../../src/cli/main.ts', import.meta.url))
const SECRET = 'runs-cli-secret-0123456789abcdef012'
const fixture = fixtureServerPerTest('runs-cli', SECRET)

/** `svc runs <args>` against the test's server. */
const runs = (args: string[], env: Record<string, string> = {}) => fixture.cli(['runs', ...args], env)

/** Starts a run of `task` over HTTP and resolves with its id. */
async function trigger(task: string, input?: unknown): Promise<string> {
  const response = await fetch(`${fixture.server.url}/__tasks/${task}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${SECRET}`, 'content-type': 'application/json' },
    body: input === undefined ? undefined : JSON.stringify(input),
  })
  expect(response.status).toBe(202)
  return ((await response.json()) as { id: string }).id
}

function finished(id: string): Promise<RunRecord> {
  return fixture.server.runtime.waitForRun(id)
}

async function suspended(id: string): Promise<void> {
  await until(async () => (await fixture.server.runtime.getRun(id))?.status === 'suspended')
}

/** A local port nothing listens on. */
async function closedPort(): Promise<number> {
  const probe = createServer()
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve))
  const { port } = probe.address() as { port: number }
  await new Promise((resolve) => probe.close(resolve))
  return port
}

/** The rows of a table, by first column, in the order printed. */
function ids(stdout: string): string[] {
  return stdout
    .trim()
    .split('\n')
    .slice(1)
    .map((line) => line.split(/\s+/)[0])
}

describe('svc runs list', () => {
  it('prints a table of the runs, newest first, with their version (- for none), duration and attempts', async () => {
    const first = await trigger('pipeline', { size: 2 })
    await finished(first)
    const second = await trigger('flaky')
    await finished(second)
    const { code, stdout } = await runs(['list'])
    expect(code).toBe(0)
    expect(stdout.split('\n')[0].split(/\s{2,}/)).toEqual(['ID', 'TASK', 'VERSION', 'STATUS', 'TRIGGER', 'CREATED', 'DURATION', 'ATTEMPTS'])
    expect(ids(stdout)).toEqual([second, first])
    expect(stdout).toMatch(new RegExp(`${first}\\s+pipeline\\s+-\\s+completed\\s+manual\\s+\\S+Z\\s+\\d+ ms\\s+1\\n`))
    expect(stdout).toMatch(new RegExp(`${second}\\s+flaky\\s+-\\s+failed\\s+manual\\s+\\S+Z\\s+\\d+ ms\\s+2$`, 'm'))
  })

  it('filters by task and by status, a status given twice or with commas', async () => {
    const done = await trigger('pipeline')
    const failed = await trigger('flaky')
    const live = await trigger('approval')
    await Promise.all([finished(done), finished(failed), suspended(live)])
    expect(ids((await runs(['list', '--task', 'flaky'])).stdout)).toEqual([failed])
    expect(ids((await runs(['list', '--status', 'suspended'])).stdout)).toEqual([live])
    expect(ids((await runs(['list', '--status', 'failed', '--status', 'completed'])).stdout)).toEqual([failed, done])
    expect(ids((await runs(['list', '--status=failed,suspended'])).stdout)).toEqual([live, failed])
    const none = await runs(['list', '--task', 'pipeline', '--status', 'failed'])
    expect(none).toMatchObject({ code: 0, stdout: 'No runs match.\n' })
  })

  it('--json prints the body of GET /__tasks/runs, and --limit pages it with a cursor', async () => {
    const older = await trigger('pipeline')
    await finished(older)
    const newer = await trigger('pipeline')
    await finished(newer)
    const all = JSON.parse((await runs(['list', '--json'])).stdout)
    expect(all.runs.map((run: { id: string }) => run.id)).toEqual([newer, older])
    expect(all.runs[0]).toMatchObject({ taskName: 'pipeline', status: 'completed', trigger: 'manual', attempts: 1, ok: true })
    const page = await runs(['list', '--limit', '1'])
    expect(ids(page.stdout.split('\n\n')[0])).toEqual([newer])
    expect(page.stdout).toContain(`More runs: add --cursor ${newer}`)
    const next = JSON.parse((await runs(['list', '--limit', '1', '--cursor', newer, '--json'])).stdout)
    expect(next).toEqual({ runs: [expect.objectContaining({ id: older })] })
  })

  it("a bad filter is the server's 400 INVALID_QUERY, and exit code 1", async () => {
    const { code, stderr } = await runs(['list', '--status', 'done'])
    expect(code).toBe(1)
    expect(stderr).toContain(`${fixture.server.url}/__tasks/runs?status=done answered 400 INVALID_QUERY: status must be one of`)
  })
})

describe('svc runs get', () => {
  it('prints the run and a timeline of its steps in the order they ran, each with its duration and a bar', async () => {
    const id = await trigger('pipeline', { size: 3 })
    await finished(id)
    const { code, stdout } = await runs(['get', id])
    expect(code).toBe(0)
    expect(stdout).toMatch(new RegExp(`^Run +${id}\\nTask +pipeline\\nStatus +completed\\nTrigger +manual\\n`))
    expect(stdout).toContain('Input      {"size":3}')
    expect(stdout).toContain('Result     {"saved":3}')
    const timeline = stdout.slice(stdout.indexOf('\nTimeline')).trim().split('\n').slice(1)
    const labels = timeline.map((line) => line.trim().split(/\s{2,}/)[1])
    expect(labels).toEqual(['attempt 1', 'step fetch', 'step parse', 'wait nap (sleep)', 'step save'])
    for (const line of timeline) {
      expect(line).toMatch(/^ {2}\+[\d.]+ (ms|s) +.+ {2} *[\d.]+ (ms|s) {2} *[█░]+$/)
      expect(line.length).toBeLessThanOrEqual(80)
    }
    expect(timeline[3]).toMatch(/░+$/)
    expect(timeline[0]).toMatch(/█+$/)
  })

  it('shows the error of each failed attempt', async () => {
    const id = await trigger('flaky')
    await finished(id)
    const { stdout } = await runs(['get', id])
    expect(stdout).toContain('Status     failed')
    expect(stdout).toContain('Error      boom on attempt 2')
    expect(stdout).toMatch(/attempt 1 \(failed\) .*\n {13}error: boom on attempt 1\n/)
    expect(stdout).toMatch(/attempt 2 \(failed\) .*\n {13}error: boom on attempt 2\n/)
  })

  it('shows what a suspended run waits on, and since when', async () => {
    const id = await trigger('approval')
    await suspended(id)
    const { stdout } = await runs(['get', id])
    expect(stdout).toMatch(/Suspended +at step approval since \d{4}-\d\d-\d\dT[\d:]+Z \(for [\d.]+ (ms|s)\)/)
    expect(stdout).toContain(`Waiting on token ${id}:approval`)
    expect(stdout).toMatch(/wait approval \(token, waiting\) +[\d.]+ (ms|s) {2}░+\n/)
  })

  it('--json prints the run record', async () => {
    const id = await trigger('pipeline')
    const record = await finished(id)
    const { stdout } = await runs(['get', id, '--json'])
    expect(JSON.parse(stdout)).toEqual(JSON.parse(JSON.stringify(record)))
  })

  it("an unknown run exits 1 naming the URL, the status and the server's code and message", async () => {
    const { code, stdout, stderr } = await runs(['get', 'no-such-run'])
    expect(code).toBe(1)
    expect(stdout).toBe('')
    expect(stderr).toContain(
      `svc runs get: ${fixture.server.url}/__tasks/runs/no-such-run answered 404 RUN_NOT_FOUND: No run has id "no-such-run"`,
    )
  })
})

describe('the timeline of svc runs get', () => {
  const record: RunRecord = {
    id: 'r1',
    taskName: 'jobs.import',
    status: 'completed',
    trigger: 'manual',
    input: undefined,
    ok: true,
    createdAt: '2025-01-01T00:00:00.000Z',
    startedAt: '2025-01-01T00:00:00.000Z',
    finishedAt: '2025-01-01T00:00:02.000Z',
    attempts: [{ index: 1, startedAt: '2025-01-01T00:00:00.000Z', durationMs: 2000 }],
    steps: {
      legacy: { status: 'completed', kind: 'run' },
      first: { status: 'completed', kind: 'run', startedAt: '2025-01-01T00:00:00.000Z', durationMs: 1000 },
      'a-step-key-far-too-long-to-fit-in-its-column': {
        status: 'completed',
        kind: 'waitForEvent',
        output: { id: 'e1', name: 'order.paid', data: {} },
        startedAt: '2025-01-01T00:00:01.000Z',
        durationMs: 1000,
      },
    },
  }
  const lines = describeRunRecord(record, Date.parse('2025-01-01T00:00:05.000Z'))
  const timeline = lines.slice(lines.indexOf('') + 2)

  it("shows a run's deadline, and the DEADLINE_EXCEEDED error of a run that passed it", () => {
    const failed: RunRecord = {
      ...record,
      status: 'failed',
      ok: false,
      deadline: '2025-01-01T00:00:02.000Z',
      attempts: [
        {
          index: 1,
          startedAt: '2025-01-01T00:00:00.000Z',
          durationMs: 2000,
          error: 'Run "r1" of task "jobs.import" passed its deadline of 2025-01-01T00:00:02.000Z',
          code: 'DEADLINE_EXCEEDED',
        },
      ],
    }
    const summary = describeRunRecord(failed, Date.parse('2025-01-01T00:00:05.000Z'))
    expect(summary).toContain(`Deadline   ${formatInstant('2025-01-01T00:00:02.000Z')}`)
    expect(summary).toContain('Error      Run "r1" of task "jobs.import" passed its deadline of 2025-01-01T00:00:02.000Z')
  })

  it('lists the steps a record keeps no timings for first, without a bar', () => {
    expect(timeline[0]).toMatch(/^ {2}- +step legacy +-$/)
  })

  it('scales each bar to the span of the run within 80 columns, cutting a long key rather than what a wait waited on', () => {
    expect(timeline.slice(1)).toEqual([
      expect.stringMatching(/ {2}\+0 ms +attempt 1 +2 s {2}█{23}$/),
      expect.stringMatching(/ {2}\+0 ms +step first +1 s {2}█{12}$/),
      expect.stringMatching(/ {2}\+1 s +wait a-step-… \(event order\.paid\) +1 s {2} {11}░{12}$/),
    ])
    for (const line of lines) expect(line.length).toBeLessThanOrEqual(80)
  })
})

describe('versions in svc runs', () => {
  const LONG = 'release-2025-06-01-4f3c2a1b'
  let store: MemoryRunStore

  // Runs of pipeline are on v1, runs of flaky on a version too long for the table, the others on none.
  beforeEach(async () => {
    store = new MemoryRunStore()
    const versioned = fixture.apiRoutes.map((route) =>
      route.path === '/api/pipeline' ? { ...route, version: 'v1' } : route.path === '/api/flaky' ? { ...route, version: LONG } : route,
    )
    await fixture.restart({ apiRoutes: versioned, store })
  })

  /** The cells of the row of run `id`. */
  function row(stdout: string, id: string): string[] {
    return (
      stdout
        .split('\n')
        .find((line) => line.startsWith(id))
        ?.split(/\s{2,}/) ?? []
    )
  }

  it("list shows each run's version, cut to 12 characters, and - for none", async () => {
    const [piped, failed, plain] = [await trigger('pipeline'), await trigger('flaky'), await trigger('chatty')]
    await Promise.all([finished(piped), finished(failed), finished(plain)])
    const { code, stdout } = await runs(['list'])
    expect(code).toBe(0)
    expect(row(stdout, piped).slice(1, 3)).toEqual(['pipeline', 'v1'])
    expect(row(stdout, failed).slice(1, 3)).toEqual(['flaky', 'release-202…'])
    expect(row(stdout, plain).slice(1, 3)).toEqual(['chatty', '-'])
    const json = JSON.parse((await runs(['list', '--json'])).stdout)
    expect(json.runs.find((run: { id: string }) => run.id === failed).version).toBe(LONG)
  })

  it('list --version keeps the runs on that version, with the other filters', async () => {
    const [piped, failed, plain] = [await trigger('pipeline'), await trigger('flaky'), await trigger('chatty')]
    await Promise.all([finished(piped), finished(failed), finished(plain)])
    expect(ids((await runs(['list', '--version', 'v1'])).stdout)).toEqual([piped])
    expect(ids((await runs(['list', `--version=${LONG}`, '--status', 'failed'])).stdout)).toEqual([failed])
    expect(await runs(['list', '--version', 'v1', '--task', 'flaky'])).toMatchObject({ code: 0, stdout: 'No runs match.\n' })
  })

  it("a bad --version is the server's 400 INVALID_QUERY, and exit code 1", async () => {
    const { code, stderr } = await runs(['list', '--version', 'v 1'])
    expect(code).toBe(1)
    expect(stderr).toContain('answered 400 INVALID_QUERY: version must be 1 to 128 printable ASCII characters without spaces (got "v 1")')
  })

  it('get shows the version, and each move of the run to another version', async () => {
    const id = await trigger('pipeline')
    await finished(id)
    expect((await runs(['get', id])).stdout).toMatch(
      new RegExp(`^Run +${id}\\nTask +pipeline\\nStatus +completed\\nTrigger +manual\\nVersion +v1\\nCreated `),
    )
    const moved = await store.createRun({
      id: 'moved-run',
      taskName: 'pipeline',
      status: 'completed',
      trigger: 'manual',
      input: null,
      ok: true,
      attempts: [],
      steps: {},
      createdAt: '2025-01-01T00:00:00.000Z',
      version: 'v3',
      migrations: [
        { from: 'v1', to: 'v2', at: '2025-01-01T00:00:01.000Z' },
        { from: 'v2', to: 'v3', at: '2025-01-01T00:00:02.500Z' },
      ],
    })
    const { code, stdout } = await runs(['get', moved.id])
    expect(code).toBe(0)
    expect(stdout).toContain(
      [
        'Version    v3',
        '           moved from v1 to v2 at 2025-01-01T00:00:01Z',
        '           moved from v2 to v3 at 2025-01-01T00:00:02Z',
        'Created    2025-01-01T00:00:00Z',
      ].join('\n'),
    )
  })
})

describe('svc runs cancel and replay', () => {
  it('cancel cancels a live run, which get then shows cancelled', async () => {
    const id = await trigger('approval')
    await suspended(id)
    expect(await runs(['cancel', id])).toMatchObject({ code: 0, stdout: `Cancelled run ${id}.\n` })
    expect((await runs(['get', id])).stdout).toContain('Status     cancelled')
  })

  it('cancelling a finished run exits 1 naming 409 RUN_FINISHED', async () => {
    const id = await trigger('pipeline')
    await finished(id)
    const { code, stderr } = await runs(['cancel', id])
    expect(code).toBe(1)
    expect(stderr).toContain(`svc runs cancel: ${fixture.server.url}/__tasks/runs/${id}/cancel answered 409 RUN_FINISHED: `)
  })

  it('replay starts a new run of the task with the same input and prints its id', async () => {
    const id = await trigger('pipeline', { size: 5 })
    await finished(id)
    const { code, stdout } = await runs(['replay', id])
    expect(code).toBe(0)
    const [, newId] = stdout.match(new RegExp(`^Replayed run ${id} as run (\\S+) \\((running|queued)\\)\\.\\n$`)) ?? []
    expect(newId).toBeDefined()
    expect(await finished(newId)).toMatchObject({ trigger: 'replay', replayOf: id, input: { size: 5 }, result: { saved: 5 } })
  })

  it('replay --from keeps the steps recorded before that one, and --input replaces the input', async () => {
    const id = await trigger('pipeline', { size: 5 })
    const source = await finished(id)
    const { code, stdout } = await runs(['replay', id, '--from', 'save', '--input', '{"size":7}'])
    expect(code).toBe(0)
    const [, newId] = stdout.match(new RegExp(`^Replayed run ${id} from step "save" as run (\\S+) \\((running|queued)\\)\\.\\n$`)) ?? []
    const replayed = await finished(newId)
    // fetch was kept as recorded: it returned 5, whatever the new input says.
    expect(replayed).toMatchObject({ input: { size: 7 }, result: { saved: 5 }, replayOf: id })
    expect(Object.keys(replayed.steps)).toEqual(['fetch', 'parse', 'nap', 'save'])
    for (const key of ['fetch', 'parse', 'nap']) expect(replayed.steps[key]).toEqual(source.steps[key])
    expect(replayed.steps.save.startedAt).not.toBe(source.steps.save.startedAt)
  })

  it('replay --from a step the run did not record exits 1 naming those it did, and starts nothing', async () => {
    const id = await trigger('pipeline', { size: 1 })
    await finished(id)
    const { code, stderr } = await runs(['replay', id, '--from', 'sav'])
    expect(code).toBe(1)
    expect(stderr).toContain(
      `answered 400 STEP_NOT_RECORDED: Run "${id}" has no step "sav" to replay from: it can be replayed from "fetch", "parse", "nap", "save"`,
    )
    expect(await fixture.server.runtime.listRuns({ taskName: 'pipeline' })).toHaveLength(1)
    const bad = await runs(['replay', id, '--input', '{size:1}'])
    expect(bad).toMatchObject({ code: 1, stderr: expect.stringContaining('--input is not valid JSON') })
  })

  it('--json prints the answer of each', async () => {
    const live = await trigger('approval')
    await suspended(live)
    expect(JSON.parse((await runs(['cancel', live, '--json'])).stdout)).toEqual({ id: live, status: 'cancelled', cancelledWith: [] })
    const replayed = JSON.parse((await runs(['replay', live, '--json'])).stdout)
    expect(replayed).toEqual({ id: expect.any(String), status: expect.any(String) })
    expect(replayed.id).not.toBe(live)
  })
})

describe('svc runs logs', () => {
  it('prints each entry with its time, level, attempt, step and attributes, oldest first', async () => {
    const id = await trigger('chatty', { items: 2 })
    await finished(id)
    const { code, stdout } = await runs(['logs', id])
    expect(code).toBe(0)
    const at = '\\d{4}-\\d\\d-\\d\\dT[\\d:.]+Z'
    expect(stdout.trim().split('\n')).toEqual([
      expect.stringMatching(new RegExp(`^${at} INFO  \\[attempt 1\\] starting \\{"items":2\\}$`)),
      expect.stringMatching(new RegExp(`^${at} INFO  \\[attempt 1\\] \\[step work\\] item 1 done$`)),
      expect.stringMatching(new RegExp(`^${at} INFO  \\[attempt 1\\] \\[step work\\] item 2 done$`)),
      expect.stringMatching(new RegExp(`^${at} WARN  \\[attempt 1\\] finished with a warning$`)),
    ])
  })

  it('--follow prints entries as they are logged, and exits 0 once the run has finished', async () => {
    const id = await trigger('gated')
    const follower = spawn(process.execPath, [cli, 'runs', 'logs', id, '--follow'], {
      env: { ...process.env, NO_COLOR: '1', SVC_TASK_URL: fixture.server.url, SVC_TASK_SECRET: SECRET },
    })
    let stdout = ''
    follower.stdout.on('data', (chunk) => (stdout += chunk))
    const exited = new Promise<number | null>((resolve) => follower.on('close', resolve))
    try {
      await until(() => stdout.includes('waiting for a go'), 10_000)
      expect(follower.exitCode).toBe(null)
      const response = await fetch(`${fixture.server.url}/__tasks/tokens/${encodeURIComponent(`${id}:go`)}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${SECRET}`, 'content-type': 'application/json' },
        body: JSON.stringify({ by: 'ada' }),
      })
      expect(response.status).toBe(200)
      expect(await exited).toBe(0)
    } finally {
      follower.kill('SIGKILL')
    }
    expect((await fixture.server.runtime.getRun(id))?.status).toBe('completed')
    expect(
      stdout
        .trim()
        .split('\n')
        .map((line) => line.split('] ').at(-1)),
    ).toEqual(['waiting for a go', 'approved {"by":"ada"}'])
  })

  it('says how many entries were dropped when the run no longer keeps them', async () => {
    const id = await trigger('flood', { lines: 510 })
    await finished(id)
    const { code, stdout, stderr } = await runs(['logs', id])
    expect(code).toBe(0)
    const lines = stdout.trim().split('\n')
    expect(lines).toHaveLength(500)
    expect(lines[0]).toMatch(/\] line 11$/)
    expect(lines.at(-1)).toMatch(/\] line 510$/)
    expect(stderr).toBe('(10 log entries were dropped: a run keeps only its last entries)\n')
  })

  it('says so when the run logged nothing', async () => {
    const id = await trigger('pipeline')
    await finished(id)
    const { code, stdout, stderr } = await runs(['logs', id])
    expect(code).toBe(0)
    expect(stdout).toBe('')
    expect(stderr).toBe(`Run ${id} (pipeline, completed) has logged nothing.\n`)
  })

  it('get shows the last entries the run logged', async () => {
    const id = await trigger('chatty', { items: 1 })
    await finished(id)
    const { stdout } = await runs(['get', id])
    expect(stdout).toMatch(/\nLogs\n {2}\S+ INFO {2}\[attempt 1\] starting \{"items":1\}\n/)
    expect(stdout).toMatch(/ WARN {2}\[attempt 1\] finished with a warning\n$/)
  })
})

describe('reaching the server', () => {
  it('a wrong secret is a 401 that says to set SVC_TASK_SECRET', async () => {
    const { code, stderr } = await runs(['list'], { SVC_TASK_SECRET: 'wrong' })
    expect(code).toBe(1)
    expect(stderr).toContain(`svc runs list: ${fixture.server.url}/__tasks/runs answered 401 UNAUTHORIZED: `)
    expect(stderr).toContain('The task secret is wrong: set SVC_TASK_SECRET')
  })

  it('a missing secret is a 401 that says to set SVC_TASK_SECRET', async () => {
    const { code, stderr } = await runs(['list'], { SVC_TASK_SECRET: '' })
    expect(code).toBe(1)
    expect(stderr).toContain('answered 401 UNAUTHORIZED: ')
    expect(stderr).toContain('The task secret is missing: set SVC_TASK_SECRET')
  })

  it('an unreachable server is named, with a hint to set SVC_TASK_URL, and exits 1', async () => {
    const url = `http://127.0.0.1:${await closedPort()}`
    const { code, stderr } = await runs(['list'], { SVC_TASK_URL: url })
    expect(code).toBe(1)
    expect(stderr).toContain(`svc runs list: could not reach ${url}/__tasks/runs: `)
    expect(stderr).toContain('ECONNREFUSED')
    expect(stderr).toContain('Set SVC_TASK_URL (or --url) to its address')
  })

  it('--url takes the place of SVC_TASK_URL', async () => {
    const id = await trigger('pipeline')
    await finished(id)
    const dead = `http://127.0.0.1:${await closedPort()}`
    const { code, stdout } = await runs(['list', '--url', fixture.server.url], { SVC_TASK_URL: dead })
    expect(code).toBe(0)
    expect(ids(stdout)).toEqual([id])
  })

  it('without SVC_TASK_URL, it asks 127.0.0.1 on PORT, as enqueue() does', async () => {
    const id = await trigger('pipeline')
    await finished(id)
    const { code, stdout } = await runs(['list'], { SVC_TASK_URL: '', PORT: String(fixture.server.port) })
    expect(code).toBe(0)
    expect(ids(stdout)).toEqual([id])
  })

  it('a --url without http:// is a usage error', async () => {
    const { code, stderr } = await runs(['list', '--url', `127.0.0.1:${fixture.server.port}`])
    expect(code).toBe(1)
    expect(stderr).toContain(
      `error: --url (got "127.0.0.1:${fixture.server.port}") must be the server's address, starting with http:// or https://`,
    )
  })
})
