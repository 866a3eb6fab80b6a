import { fileURLToPath } from 'node:url'
import { describe, expect, test } from 'vitest'
import { svc } from '../cli/_svc.ts'
import { writeApp } from '../targets/_app.ts'

const fixture = (name: string) => fileURLToPath(new URL(`../fixtures/${name}`, import.meta.url))

describe('svc routes inspect', () => {
  test('--json prints every route with the manifest fields', async () => {
    const { code, stdout, stderr } = await svc(['routes', 'inspect', '--json', '--root', fixture('app-basic')])
    expect(stderr).toBe('')
    expect(code).toBe(0)
    const { routes, pages } = JSON.parse(stdout)
    expect(routes).toHaveLength(11)
    const report = routes.find((r: { path: string }) => r.path === '/api/report')
    expect(report).toMatchObject({
      path: '/api/report',
      file: 'src/api/report.ts',
      kind: 'task',
      name: 'report',
      methods: ['POST'],
      websocket: false,
      schedule: '30 2 * * *',
      on: null,
      retries: 2,
      timeout: 120000,
      origins: null,
      compute: { class: 'function', memory: '1gb', cpu: null },
      provider: expect.any(String),
      confidence: expect.stringMatching(/^(high|medium|low)$/),
      reasons: expect.arrayContaining([`route.kind is 'task'`]),
      warnings: [],
    })
    const room = routes.find((r: { path: string }) => r.path === '/api/live/room')
    expect(room.compute).toEqual({ class: 'dedicated', memory: '2gb', cpu: 2, machine: { memoryMb: 2048, cpus: 2 } })
    expect(pages.map((p: { path: string }) => p.path)).toEqual(['/', '/about', '/blog/:slug'])
  })

  test('--root defaults to the current directory', async () => {
    const { code, stdout } = await svc(['routes', 'inspect', '--json'], { cwd: fixture('app-basic') })
    expect(code).toBe(0)
    expect(JSON.parse(stdout).routes).toHaveLength(11)
  })

  test('without --json prints a table, with warnings on stderr', async () => {
    const { code, stdout, stderr } = await svc(['routes', 'inspect', '--root', fixture('app-basic')])
    expect(code).toBe(0)
    const lines = stdout.split('\n')
    expect(lines[0]).toMatch(/^PATH\s+KIND\s+NAME\s+METHODS\s+SCHEDULE\s+ON\s+FLOW\s+COMPUTE\s+PROVIDER\s+CONFIDENCE$/)
    expect(stdout).toMatch(/\/api\/report\s+task\s+report\s+POST\s+30 2 \* \* \*\s+-\s+-\s+function 1gb/)
    expect(stdout).toMatch(/\/api\/chat\s+hot\s+-\s+GET,WS\s+-\s+-\s+-\s+dedicated\s+persistent-host\s+high/)
    expect(stdout).toMatch(/PAGE\s+MODE\s+REVALIDATE\s+TAGS/)
    expect(stdout).toMatch(/\/about\s+hybrid\s+60s\s+about,team/)
    expect(stderr).toContain("src/api/counter.ts: warning: advisor: set compute: { class: 'dedicated' }")
  })

  test('a task started by events shows them in the ON column, and --json as the on list', async () => {
    const app = await writeApp({
      'src/api/orders/receipt.ts': `export const kind = 'task'\nexport const on = ['order.paid', 'order.refunded']\nexport async function POST() {}\n`,
      'src/api/orders/ship.ts': `export const route = { kind: 'task', schedule: '0 * * * *', on: 'order.paid' }\nexport async function POST() {}\n`,
    })
    try {
      const text = await svc(['routes', 'inspect', '--root', app.root])
      expect(text.stderr).toBe('')
      expect(text.stdout.split('\n')).toEqual([
        'PATH                 KIND  NAME            METHODS  SCHEDULE   ON                         FLOW  COMPUTE       PROVIDER     CONFIDENCE',
        '/api/orders/receipt  task  orders.receipt  POST     -          order.paid,order.refunded  -     function 1gb  edge-worker  high',
        '/api/orders/ship     task  orders.ship     POST     0 * * * *  order.paid                 -     function 1gb  edge-worker  high',
        '',
      ])
      const json = await svc(['routes', 'inspect', '--json', '--root', app.root])
      expect(JSON.parse(json.stdout).routes.map((r: { name: string; on: string[] | null }) => [r.name, r.on])).toEqual([
        ['orders.receipt', ['order.paid', 'order.refunded']],
        ['orders.ship', ['order.paid']],
      ])
    } finally {
      await app.cleanup()
    }
  })

  test('config errors: all of them on stderr as file:line:col, exit code 1, nothing on stdout', async () => {
    const { code, stdout, stderr } = await svc(['routes', 'inspect', '--json', '--root', fixture('bad-config')])
    expect(code).toBe(1)
    expect(stdout).toBe('')
    const lines = stderr.trim().split('\n')
    expect(lines).toHaveLength(9)
    expect(lines[0]).toMatch(/^src\/api\/compute\.ts:1:55: hot routes need compute class 'dedicated'/)
    expect(lines[2]).toBe(
      `src/api/literals.ts:8:12: route.timeout must be a static literal, not a call (minutes(5)); write the value itself`,
    )
    expect(lines.slice(0, 8).every((line) => /^src\/[^:]+:\d+:\d+: /.test(line))).toBe(true)
    expect(lines[8]).toBe('8 config errors')
  })
})

describe('svc runtime advise', () => {
  test('--json prints advice in the documented shape', async () => {
    const { code, stdout } = await svc(['runtime', 'advise', '--json', '--root', fixture('app-basic')])
    expect(code).toBe(0)
    const { advice } = JSON.parse(stdout)
    expect(advice).toHaveLength(11)
    for (const entry of advice) {
      expect(entry).toMatchObject({
        path: expect.any(String),
        kind: expect.stringMatching(/^(serverless|hot|task)$/),
        current: { class: expect.any(String) },
        recommended: { class: expect.any(String) },
        provider: expect.stringMatching(/^(function-platform|persistent-host|edge-worker)$/),
        confidence: expect.stringMatching(/^(high|medium|low)$/),
        severity: expect.stringMatching(/^(info|warn)$/),
        reasons: expect.any(Array),
      })
    }
    const counter = advice.find((a: { path: string }) => a.path === '/api/counter')
    expect(counter).toMatchObject({
      severity: 'warn',
      current: { class: 'function', memory: '1gb' },
      recommended: { class: 'dedicated' },
      provider: 'persistent-host',
      nextCommand: 'svc routes inspect',
    })
    const next = (path: string) => advice.find((a: { path: string }) => a.path === path).nextCommand
    expect(next('/api/jobs/notify')).toBe('svc tasks run jobs.notify')
    expect(next('/api/report')).toBe('svc tasks list')
    expect(next('/api/users/:id')).toBeUndefined()
  })

  test('without --json prints a table and the warnings with their fixes', async () => {
    const { code, stdout } = await svc(['runtime', 'advise', '--root', fixture('app-basic')])
    expect(code).toBe(0)
    expect(stdout.split('\n')[0]).toMatch(/^PATH\s+KIND\s+CURRENT\s+RECOMMENDED\s+PROVIDER\s+CONFIDENCE\s+SEVERITY$/)
    expect(stdout).toContain('warn /api/counter (src/api/counter.ts)')
    expect(stdout).toContain('  - module-scope hits (let binding, line 3) is changed inside GET (line 6)')
    expect(stdout).toMatch(/11 routes, 1 warning\n$/)
  })

  test('without --json prints the command to run next for each task', async () => {
    const { code, stdout } = await svc(['runtime', 'advise', '--root', fixture('app-basic')])
    expect(code).toBe(0)
    expect(stdout).toContain('\ninfo /api/jobs/notify (src/api/jobs/notify.ts)\n  then: svc tasks run jobs.notify\n')
    expect(stdout).toContain('\ninfo /api/report (src/api/report.ts)\n  then: svc tasks list\n')
    expect(stdout).toContain("  fix: set compute: { class: 'dedicated' } in the route export of src/api/counter.ts")
    expect(stdout).toContain('  then: svc routes inspect\n')
  })

  test('config errors stop the advice with exit code 1', async () => {
    const { code, stdout, stderr } = await svc(['runtime', 'advise', '--root', fixture('bad-duplicates')])
    expect(code).toBe(1)
    expect(stdout).toBe('')
    expect(stderr).toContain('URL /api/users is declared by both src/api/users.ts and src/api/users/index.ts')
  })
})

describe('bad command lines', () => {
  test.each([
    [['routes', 'inspect', '--jsno'], 'error: Unknown option: --jsno'],
    [['routes', 'inspect', '--root'], 'error: --root needs a value'],
    [['routes', 'inspect', '--root', '--json'], 'error: --root needs a value'],
    [['routes', 'inspect', 'extra'], 'error: Unexpected argument: extra'],
    [['routes', 'list'], 'error: Unknown command list'],
    [['nope'], 'error: Unknown command nope'],
    [['routes'], 'error: No command specified.'],
    [['runtime', 'advise', '--json=yes'], 'error: --json takes no value (got yes)'],
  ])('svc %j fails with a clear error and exit code 1', async (args, message) => {
    const { code, stdout, stderr } = await svc(args, { cwd: fixture('app-basic') })
    expect(code).toBe(1)
    expect(stdout).toBe('')
    expect(stderr.trim().split('\n').at(-1)).toBe(message)
    expect(stderr).toContain('USAGE')
  })

  test('a --root that does not exist is an error', async () => {
    const { code, stderr } = await svc(['routes', 'inspect', '--root', fixture('no-such-app')])
    expect(code).toBe(1)
    expect(stderr).toMatch(/error: --root .*no-such-app: no such directory/)
  })

  test('--help prints usage and succeeds', async () => {
    const { code, stdout } = await svc(['routes', 'inspect', '--help'])
    expect(code).toBe(0)
    expect(stdout).toContain('--root')
    expect(stdout).toContain('--json')
  })
})
