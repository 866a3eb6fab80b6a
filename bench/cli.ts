/**
 * CLI start-up benchmark (`npm run bench:cli`): the wall time of `svc --help`
 * and `svc tasks list` on a small app, each as a fresh process started the
 * way a user starts it (`bin/svc.mjs`), against `node -e 0` timed in the same
 * rounds. Goal: each at most 1.5 × `node -e 0`.
 *
 * Rounds alternate the commands, so a machine that gets busier partway
 * through slows all of them alike; the figure is the median of each.
 * The first round only warms Node's compile cache and the file system.
 */
import { spawnSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

const ROUNDS = 15
const GOAL = 1.5
const BIN = fileURLToPath(new URL('../bin/svc.mjs', import.meta.url))

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]

const root = mkdtempSync(join(tmpdir(), 'svc-bench-cli-'))
try {
  mkdirSync(join(root, 'src/api/jobs'), { recursive: true })
  writeFileSync(join(root, 'src/api/hello.ts'), 'export function GET() {\n  return { hello: "world" }\n}\n')
  writeFileSync(
    join(root, 'src/api/jobs/notify.ts'),
    "export const route = { kind: 'task', retries: 2 } as const\nexport const schedule = '*/5 * * * *'\nexport async function POST() {\n  return { sent: true }\n}\n",
  )

  const commands: [label: string, args: string[]][] = [
    ['node -e 0', ['-e', '0']],
    ['svc --help', [BIN, '--help']],
    ['svc tasks list', [BIN, 'tasks', 'list', '--root', root]],
  ]
  const times = new Map(commands.map(([label]) => [label, [] as number[]]))
  for (let round = 0; round <= ROUNDS; round++) {
    for (const [label, args] of commands) {
      const start = performance.now()
      const child = spawnSync(process.execPath, args, { encoding: 'utf8' })
      const elapsed = performance.now() - start
      if (child.status !== 0) throw new Error(`${label} failed (${child.status}):\n${child.stderr}`)
      if (round > 0) times.get(label)!.push(elapsed)
    }
  }

  const baseline = median(times.get('node -e 0')!)
  console.log(`CLI start-up, Node ${process.version}, median of ${ROUNDS} runs each (compile cache warm)\n`)
  for (const [label] of commands) {
    const m = median(times.get(label)!)
    const ratio = m / baseline
    const goal = label === 'node -e 0' ? '' : `goal <= ${GOAL} x  ${ratio <= GOAL ? 'ok' : 'OVER'}`
    console.log(`${label.padEnd(16)} ${`${m.toFixed(1)} ms`.padStart(10)}   ${`${ratio.toFixed(2)} x`.padStart(7)}   ${goal}`)
  }
} finally {
  rmSync(root, { recursive: true, force: true })
}
