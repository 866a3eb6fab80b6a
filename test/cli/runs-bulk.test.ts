import { describe, expect, it } from 'vitest'
import { MemoryRunStore } from '../../src/index.ts'
import type { RunRecord } from '../../src/types.ts'
import { until } from '../_helpers.ts'
import { fixtureServerPerTest } from './_svc.ts'

const SECRET = 'runs-bulk-cli-secret-0123456789abcdef'
const fixture = fixtureServerPerTest('runs-cli', SECRET)

/** `svc runs <args>` against the test's server. */
const runs = (args: string[]) => fixture.cli(['runs', ...args])

/** Starts a run of `task` over HTTP with `tags` (the Svc-Tags header) and resolves with its id. */
async function trigger(task: string, tags: string[] = []): Promise<string> {
  const headers: Record<string, string> = { authorization: `Bearer ${SECRET}` }
  if (tags.length > 0) headers['svc-tags'] = tags.join(',')
  const response = await fetch(`${fixture.server.url}/__tasks/${task}`, { method: 'POST', headers })
  expect(response.status).toBe(202)
  return ((await response.json()) as { id: string }).id
}

function finished(id: string): Promise<RunRecord> {
  return fixture.server.runtime.waitForRun(id)
}

async function status(id: string): Promise<string | undefined> {
  return (await fixture.server.runtime.getRun(id))?.status
}

/** `n` runs of the approval task, each suspended on its token, with `tags`. */
async function suspendedRuns(n: number, tags: string[]): Promise<string[]> {
  const ids: string[] = []
  for (let i = 0; i < n; i++) ids.push(await trigger('approval', tags))
  await until(async () => (await Promise.all(ids.map(status))).every((s) => s === 'suspended'))
  return ids
}

/** The first column of each table row, header left out and up to the first blank line. */
function ids(stdout: string): string[] {
  return stdout
    .split('\n\n')[0]
    .trim()
    .split('\n')
    .slice(1)
    .map((line) => line.split(/\s+/)[0])
}

describe('svc runs list with tags, metadata and creation time', () => {
  it('--tag keeps the runs holding every tag given, and the table gains a TAGS column', async () => {
    const both = await trigger('pipeline', ['tenant:acme', 'beta'])
    const acme = await trigger('pipeline', ['tenant:acme'])
    const plain = await trigger('pipeline')
    await Promise.all([finished(both), finished(acme), finished(plain)])
    const all = await runs(['list'])
    expect(all.code).toBe(0)
    expect(all.stdout.split('\n')[0].split(/\s{2,}/)).toEqual([
      'ID',
      'TASK',
      'VERSION',
      'STATUS',
      'TRIGGER',
      'CREATED',
      'DURATION',
      'ATTEMPTS',
      'TAGS',
    ])
    expect(all.stdout).toMatch(new RegExp(`^${both}\\s.*\\s1\\s+tenant:acme,beta$`, 'm'))
    expect(all.stdout).toMatch(new RegExp(`^${plain}\\s.*\\s1\\s+-$`, 'm'))
    expect(ids((await runs(['list', '--tag', 'tenant:acme'])).stdout)).toEqual([acme, both])
    expect(ids((await runs(['list', '--tag', 'tenant:acme', '--tag', 'beta'])).stdout)).toEqual([both])
    expect(ids((await runs(['list', '--tag=beta,tenant:acme'])).stdout)).toEqual([both])
    expect(await runs(['list', '--tag', 'tenant:zeta'])).toMatchObject({ code: 0, stdout: 'No runs match.\n' })
    const json = JSON.parse((await runs(['list', '--tag', 'beta', '--json'])).stdout)
    expect(json.runs).toEqual([expect.objectContaining({ id: both, tags: ['tenant:acme', 'beta'] })])
  })

  it('--metadata key=value, --since and --until filter on what the run holds and when it was created', async () => {
    const store = new MemoryRunStore()
    await fixture.restart({ store })
    const record = (id: string, createdAt: string, metadata: Record<string, unknown>) =>
      store.createRun({
        id,
        taskName: 'pipeline',
        status: 'completed',
        trigger: 'manual',
        input: null,
        ok: true,
        attempts: [],
        steps: {},
        createdAt,
        metadata,
      })
    await record('january', '2025-01-10T00:00:00.000Z', { stage: 'sent', count: 3 })
    await record('march', '2025-03-10T00:00:00.000Z', { stage: 'draft', count: 4 })
    const recent = await trigger('pipeline')
    await finished(recent)
    expect(ids((await runs(['list', '--metadata', 'stage=sent'])).stdout)).toEqual(['january'])
    expect(ids((await runs(['list', '--metadata', 'count=4', '--metadata=stage=draft'])).stdout)).toEqual(['march'])
    expect(await runs(['list', '--metadata', 'stage=sent', '--metadata', 'count=4'])).toMatchObject({ stdout: 'No runs match.\n' })
    expect(ids((await runs(['list', '--since', '2025-02-01T00:00:00Z'])).stdout)).toEqual([recent, 'march'])
    expect(ids((await runs(['list', '--until', '2025-02-01T00:00:00Z'])).stdout)).toEqual(['january'])
    expect(ids((await runs(['list', '--since', '2025-01-01', '--until', String(Date.parse('2025-12-31'))])).stdout)).toEqual([
      'march',
      'january',
    ])
    // A time ago counts back from now: only the run just started is within the hour.
    expect(ids((await runs(['list', '--since', '1h'])).stdout)).toEqual([recent])
  })

  it('a bad --metadata or --since is a usage error naming the form it takes', async () => {
    const metadata = await runs(['list', '--metadata', 'stage'])
    expect(metadata.code).toBe(1)
    expect(metadata.stderr).toContain('error: --metadata takes key=value, such as --metadata stage=sent (got "stage")')
    const since = await runs(['list', '--since', 'yesterday'])
    expect(since.code).toBe(1)
    expect(since.stderr).toContain('error: --since must be an instant: ISO 8601 such as 2026-11-29T00:00:00Z')
  })
})

describe('svc runs cancel without a run id', () => {
  it('is a dry run without --yes: it lists the live runs the filter finds, prints the count and cancels nothing', async () => {
    const tagged = await suspendedRuns(3, ['batch:1'])
    const [other] = await suspendedRuns(1, [])
    const { code, stdout } = await runs(['cancel', '--tag', 'batch:1'])
    expect(code).toBe(0)
    expect(stdout.split('\n')[0].split(/\s{2,}/)).toEqual(['ID', 'TASK', 'STATUS'])
    expect(ids(stdout)).toEqual([...tagged].reverse())
    expect(stdout).toMatch(/\n\n3 runs would be cancelled; run again with --yes to cancel them\.\n$/)
    for (const id of [...tagged, other]) expect(await status(id)).toBe('suspended')
    const page = await runs(['cancel', '--tag', 'batch:1', '--limit', '2'])
    expect(page.stdout).toContain('At least 2 runs would be cancelled, and more may match')
    const json = JSON.parse((await runs(['cancel', '--tag', 'batch:1', '--json'])).stdout)
    expect(json).toMatchObject({ action: 'cancel', dryRun: true, matched: 3 })
    expect(await runs(['cancel', '--tag', 'batch:2'])).toMatchObject({ code: 0, stdout: 'No runs match: nothing would be cancelled.\n' })
    for (const id of tagged) expect(await status(id)).toBe('suspended')
  })

  it('with --yes cancels every run the filter finds, page after page, one line per run and a total', async () => {
    const tagged = await suspendedRuns(5, ['batch:1'])
    const [other] = await suspendedRuns(1, ['batch:2'])
    const { code, stdout } = await runs(['cancel', '--tag', 'batch:1', '--task', 'approval', '--limit', '2', '--yes'])
    expect(code).toBe(0)
    const lines = stdout.trim().split('\n')
    expect(lines).toHaveLength(6)
    expect(lines.slice(0, 5).sort()).toEqual(tagged.map((id) => `Cancelled run ${id} (approval).`).sort())
    expect(lines[5]).toBe('Cancelled 5 runs (of 5 runs found).')
    for (const id of tagged) expect(await status(id)).toBe('cancelled')
    expect(await status(other)).toBe('suspended')
    expect(await runs(['cancel', '--tag', 'batch:1', '-y'])).toMatchObject({ code: 0, stdout: 'No runs match: nothing was cancelled.\n' })
  })

  it('--yes --json prints one object with the items of every page and the totals', async () => {
    const tagged = await suspendedRuns(3, ['batch:1'])
    const { code, stdout } = await runs(['cancel', '--tag', 'batch:1', '--limit', '2', '--yes', '--json', '--children', 'none'])
    expect(code).toBe(0)
    const result = JSON.parse(stdout)
    expect(result).toMatchObject({ action: 'cancel', dryRun: false, matched: 3, totals: { cancelled: 3, skipped: 0, failed: 0 } })
    expect(result.runs.map((item: { id: string }) => item.id).sort()).toEqual([...tagged].sort())
    expect(result.runs[0]).toMatchObject({ taskName: 'approval', status: 'suspended', outcome: 'cancelled', cancelledWith: [] })
    for (const id of tagged) expect(await status(id)).toBe('cancelled')
  })
})

describe('svc runs replay without a run id', () => {
  it('with --yes replays the failed runs holding a tag, and none other', async () => {
    const failed = [await trigger('flaky', ['retry-me']), await trigger('flaky', ['retry-me'])]
    const untagged = await trigger('flaky')
    const completed = await trigger('pipeline', ['retry-me'])
    await Promise.all([...failed, untagged, completed].map(finished))
    const dry = await runs(['replay', '--tag', 'retry-me', '--status', 'failed'])
    expect(dry.stdout).toMatch(/\n\n2 runs would be replayed; run again with --yes to replay them\.\n$/)
    expect(await fixture.server.runtime.listRuns({})).toHaveLength(4)
    const { code, stdout } = await runs(['replay', '--tag', 'retry-me', '--status', 'failed', '--yes'])
    expect(code).toBe(0)
    const lines = stdout.trim().split('\n')
    expect(lines).toHaveLength(3)
    const replays = lines.slice(0, 2).map((line) => {
      const [, source, newId] = line.match(/^Replayed run (\S+) \(flaky\) as run (\S+)\.$/) ?? []
      expect(failed).toContain(source)
      return newId
    })
    expect(lines[2]).toBe('Replayed 2 runs (of 2 runs found).')
    const records = await Promise.all(replays.map(finished))
    expect(records.map((run) => run.replayOf).sort()).toEqual([...failed].sort())
    for (const run of records) expect(run).toMatchObject({ trigger: 'replay', tags: ['retry-me'] })
    expect(await fixture.server.runtime.listRuns({})).toHaveLength(6)
  })
})

describe('usage errors of the bulk form', () => {
  it('a run id with filter flags names the fix, and acts on nothing', async () => {
    const [id] = await suspendedRuns(1, ['batch:1'])
    const both = await runs(['cancel', id, '--tag', 'batch:1', '--yes'])
    expect(both.code).toBe(1)
    expect(both.stderr).toContain(
      `error: svc runs cancel takes a run id or filter flags, not both: drop --tag to cancel run ${id} alone, or drop the id to cancel the runs the filter finds`,
    )
    expect(await status(id)).toBe('suspended')
    const limit = await runs(['cancel', id, '--limit', '5'])
    expect(limit).toMatchObject({
      code: 1,
      stderr: expect.stringContaining(`error: --limit is the page size of a bulk cancel: drop it to cancel run ${id} alone`),
    })
    expect(await status(id)).toBe('suspended')
  })

  it('neither a run id nor a filter flag names both ways', async () => {
    for (const action of ['cancel', 'replay']) {
      const { code, stderr } = await runs([action, '--yes'])
      expect(code).toBe(1)
      expect(stderr).toContain(
        `error: svc runs ${action} needs a run id, or filter flags (--task, --status, --tag, --metadata, --since, --until, --version)`,
      )
    }
  })

  it('a bulk replay refuses --from and --input, and a bad --limit', async () => {
    const fromStep = await runs(['replay', '--tag', 'retry-me', '--from', 'save'])
    expect(fromStep).toMatchObject({
      code: 1,
      stderr: expect.stringContaining('error: --from and --input replay a single run: give its id'),
    })
    const limit = await runs(['replay', '--tag', 'retry-me', '--limit', '1001'])
    expect(limit).toMatchObject({
      code: 1,
      stderr: expect.stringContaining('error: --limit must be a whole number from 1 to 1000 (got "1001")'),
    })
  })
})
