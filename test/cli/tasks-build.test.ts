import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { copyFixtureApp, writeApp } from '../targets/_app.ts'
import { svc } from './_svc.ts'

describe('svc tasks and svc build', () => {
  let app: Awaited<ReturnType<typeof copyFixtureApp>>
  beforeAll(async () => {
    app = await copyFixtureApp()
  })
  afterAll(() => app?.cleanup())

  it('tasks list --json gives name, path, schedule, timezone, events, retries, timeout and flow limits', async () => {
    const { code, stdout } = await svc(['tasks', 'list', '--json', '--root', app.root])
    expect(code).toBe(0)
    const { tasks } = JSON.parse(stdout)
    expect(tasks.find((t: { name: string }) => t.name === 'jobs.tick')).toEqual({
      name: 'jobs.tick',
      path: '/api/jobs/tick',
      schedule: '*/10 * * * *',
      timezone: null,
      on: null,
      retries: 0,
      timeout: 30000,
      flow: {},
    })
  })

  it('tasks list shows a schedule with its timezone and the flow limits of each task', async () => {
    const limited = await writeApp({
      'src/api/digest.ts': `export const route = { kind: 'task', schedule: '0 9 * * *', timezone: 'Europe/Berlin' }
export async function POST() {}
`,
      'src/api/sync.ts': `export const route = { kind: 'task', concurrency: { limit: 2, key: 'input.account' }, rateLimit: { limit: 10, periodSeconds: 60 }, debounce: { seconds: 5 } }
export async function POST() {}
`,
    })
    try {
      const json = await svc(['tasks', 'list', '--json', '--root', limited.root])
      expect(json.code).toBe(0)
      const { tasks } = JSON.parse(json.stdout)
      expect(tasks.map((t: { name: string; timezone: string | null }) => [t.name, t.timezone])).toEqual([
        ['digest', 'Europe/Berlin'],
        ['sync', null],
      ])
      expect(tasks[1].flow).toEqual({
        concurrency: { limit: 2, key: 'input.account' },
        rateLimit: { limit: 10, periodSeconds: 60 },
        debounce: { seconds: 5 },
      })
      const text = await svc(['tasks', 'list', '--root', limited.root])
      expect(text.code).toBe(0)
      const lines = text.stdout.split('\n')
      expect(lines[0]).toMatch(/^NAME\s+PATH\s+SCHEDULE\s+ON\s+RETRIES\s+TIMEOUT\s+FLOW$/)
      expect(lines.find((line) => line.startsWith('digest'))).toContain('0 9 * * * (Europe/Berlin)')
      expect(lines.find((line) => line.startsWith('sync'))).toMatch(/concurrency 2 per input\.account.*10 .*60 s.*debounce 5 s/)
    } finally {
      await limited.cleanup()
    }
  })

  it('tasks list shows the events that start each task next to its schedule', async () => {
    const events = await writeApp({
      'src/api/cleanup.ts': `export const kind = 'task'\nexport const schedule = '0 3 * * *'\nexport async function POST() {}\n`,
      'src/api/orders/receipt.ts': `export const kind = 'task'\nexport const on = ['order.paid', 'order.refunded']\nexport async function POST() {}\n`,
      'src/api/orders/ship.ts': `export const route = { kind: 'task', schedule: '0 * * * *', on: 'order.paid' }\nexport async function POST() {}\n`,
    })
    try {
      const text = await svc(['tasks', 'list', '--root', events.root])
      expect(text.code).toBe(0)
      expect(text.stdout).toBe(
        [
          'NAME            PATH                 SCHEDULE   ON                         RETRIES  TIMEOUT   FLOW',
          'cleanup         /api/cleanup         0 3 * * *  -                          0        30000 ms  -',
          'orders.receipt  /api/orders/receipt  -          order.paid,order.refunded  0        30000 ms  -',
          'orders.ship     /api/orders/ship     0 * * * *  order.paid                 0        30000 ms  -',
          '',
        ].join('\n'),
      )
      const json = await svc(['tasks', 'list', '--json', '--root', events.root])
      expect(JSON.parse(json.stdout).tasks.map((t: { name: string; on: string[] | null }) => [t.name, t.on])).toEqual([
        ['cleanup', null],
        ['orders.receipt', ['order.paid', 'order.refunded']],
        ['orders.ship', ['order.paid']],
      ])
    } finally {
      await events.cleanup()
    }
  })

  it('tasks run --json prints the exact envelope and exits 0', async () => {
    const { code, stdout } = await svc(['tasks', 'run', 'jobs.double', '--input', '{"n":2}', '--json', '--root', app.root])
    expect(code).toBe(0)
    const envelope = JSON.parse(stdout)
    expect(Object.keys(envelope).sort()).toEqual(['attempts', 'ok', 'result', 'steps', 'taskName'])
    expect(envelope).toMatchObject({
      ok: true,
      taskName: 'jobs.double',
      result: { doubled: 4 },
      steps: { double: { status: 'completed', output: 4 } },
    })
    expect(envelope.attempts).toHaveLength(1)
    expect(envelope.attempts[0]).toMatchObject({ index: 1 })
    expect(new Date(envelope.attempts[0].startedAt).toISOString()).toBe(envelope.attempts[0].startedAt)
  })

  it('tasks run resolves sleeps and child tasks in-process', async () => {
    const { code, stdout, stderr } = await svc(['tasks', 'run', 'jobs.nap', '--json', '--root', app.root])
    expect(code).toBe(0)
    const envelope = JSON.parse(stdout)
    expect(envelope.result).toEqual({ before: 'ran', child: { ok: true, result: { doubled: 6 } } })
    expect(Object.keys(envelope.steps)).toEqual(['before', 'nap', 'child'])
    expect(stderr).toMatch(/in-process/)
  })

  it('tasks run exits 1 with every attempt recorded when the run fails', async () => {
    const { code, stdout } = await svc(['tasks', 'run', 'jobs.fail', '--json', '--root', app.root])
    expect(code).toBe(1)
    const envelope = JSON.parse(stdout)
    expect(envelope.ok).toBe(false)
    expect(envelope.attempts.map((a: { error: string }) => a.error)).toEqual(['attempt 1 failed', 'attempt 2 failed'])
    expect('result' in envelope).toBe(false)
  })

  it('tasks run prints the readable form by default', async () => {
    const { code, stdout } = await svc(['tasks', 'run', 'jobs.double', '--input', '{"n":1}', '--root', app.root])
    expect(code).toBe(0)
    expect(stdout).toMatch(/^jobs\.double: completed after 1 attempt\(s\)/)
    expect(stdout).toMatch(/"doubled": 2/)
  })

  it('tasks run prints VALIDATION_FAILED details on stderr and exits 1 for a bad payload', async () => {
    const { code, stdout, stderr } = await svc(['tasks', 'run', 'jobs.double', '--input', '{"n":"x"}', '--root', app.root])
    expect(code).toBe(1)
    expect(stdout).toBe('')
    expect(stderr).toMatch(/VALIDATION_FAILED/)
    expect(stderr).toMatch(/body\.n: n must be a number/)
  })

  it('tasks run names the available tasks for an unknown one', async () => {
    const { code, stderr } = await svc(['tasks', 'run', 'jobs.nope', '--root', app.root])
    expect(code).toBe(1)
    expect(stderr).toMatch(/Unknown task "jobs\.nope"\. Available tasks: .*jobs\.double/)
  })

  it('tasks run rejects malformed JSON and a missing --input value', async () => {
    const bad = await svc(['tasks', 'run', 'jobs.double', '--input', '{n:', '--root', app.root])
    expect(bad.code).toBe(1)
    expect(bad.stderr).toMatch(/--input is not valid JSON/)
    const missing = await svc(['tasks', 'run', 'jobs.double', '--root', app.root, '--input'])
    expect(missing.code).toBe(1)
    expect(missing.stderr).toMatch(/--input needs a value/)
  })

  it('tasks run prints only the error for bad --input JSON, naming the value and the fix, not the usage', async () => {
    const { code, stdout, stderr } = await svc(['tasks', 'run', 'jobs.double', '--input', '{bad', '--root', app.root])
    expect(code).toBe(1)
    expect(stdout).toBe('')
    expect(stderr).toContain('--input is not valid JSON')
    expect(stderr).toContain('(got "{bad")')
    expect(stderr).toContain(`--input '{"key":"value"}'`)
    expect(stderr).not.toMatch(/USAGE|OPTIONS/)
    expect(stderr.trim().split('\n')).toHaveLength(1)
  })

  it('build prints bundle sizes, warns about hot routes and exits 0', async () => {
    const { code, stdout, stderr } = await svc(['build', '--target', 'cloudflare', '--root', app.root])
    expect(code).toBe(0)
    expect(stdout).toMatch(/\.output\/cloudflare\/index\.mjs\s+[\d.]+ KiB\s+[\d.]+ KiB/)
    expect(stderr).toContain(
      '[svc] 1 hot route(s) cannot run on cloudflare and were not bundled: /api/live — deploy them to a persistent host',
    )
  })

  it('build fails with every config error and exits 1', async () => {
    const file = join(app.root, 'src/api/hello.ts')
    const original = await readFile(file, 'utf8')
    await writeFile(file, `export const route = { retries: -1, timeout: \`5\` }\n${original}`)
    try {
      const { code, stderr } = await svc(['build', '--root', app.root])
      expect(code).toBe(1)
      expect(stderr).toMatch(/src\/api\/hello\.ts:1:\d+: .*retries/)
      expect(stderr).toMatch(/src\/api\/hello\.ts:1:\d+: .*template literal/)
    } finally {
      await writeFile(file, original)
    }
  })

  it('build rejects an unknown target', async () => {
    const { code, stderr } = await svc(['build', '--target', 'mars', '--root', app.root])
    expect(code).toBe(1)
    expect(stderr).toContain('--target must be one of node, cloudflare, lambda, vercel, bun, deno (got "mars")')
  })
})
