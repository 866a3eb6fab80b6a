/**
 * More processes on one Postgres are never slower (`npm run bench:processes`):
 * 1, 2 and 3 processes share one schema of an embedded Postgres with its
 * durable defaults (`fsync` and `synchronous_commit` on), and run the same
 * load together: `RUNS` no-op runs, triggered in equal shares by the
 * processes at once. Each round is on a fresh schema, and the process
 * counts take turns round by round (1, 2, 3, then 3, 2, 1, ...), so a
 * slower minute of a shared machine moves them all.
 *
 * Printed for each count, as medians over the rounds: total runs/s, from
 * the go to the last run completed in the database, and its ratio to one
 * process; p50 and p99 from `trigger()` to the handler's first line. Goal:
 * 3 processes ≥ 1.0 × one process on this 2-core machine. What bounds 10
 * and 100 processes is in bench/README.md.
 *
 * Then the same on one SQLite file the processes share (`shared: true`,
 * WAL, `synchronous=FULL`): printed without a goal, since a file takes one
 * writer at a time and more processes buy no more writes, only more room
 * to run handlers.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import { createInterface } from 'node:readline'
import postgres from 'postgres'
import { startEmbeddedPostgres } from '../test/postgres/_embedded.ts'

const RUNS = 6_000
const ROUNDS = 4
const COUNTS = [1, 2, 3]
const GOAL = 1.0
const CHILD = new URL('./_processes-child.ts', import.meta.url).pathname

interface Child {
  proc: ChildProcess
  next(): Promise<Record<string, unknown>>
  send(line: string): void
}

function startChild(args: string[]): Child {
  const proc = spawn(process.execPath, [CHILD, ...args], { stdio: ['pipe', 'pipe', 'inherit'] })
  const lines = createInterface({ input: proc.stdout! })[Symbol.asyncIterator]()
  return {
    proc,
    async next() {
      const { value, done } = await lines.next()
      if (done) throw new Error('bench:processes: a process ended before it answered')
      return JSON.parse(value)
    },
    send: (line) => proc.stdin!.write(`${line}\n`),
  }
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]
const percentile = (values: number[], p: number) =>
  [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(values.length * p))]

interface Round {
  rate: number
  p50: number
  p99: number
}

/** Where a round's processes keep their runs, and how many of its runs have completed. */
interface Place {
  args: string[]
  completed(): Promise<number>
  close(): Promise<void>
}

function postgresPlace(url: string, label: string): Place {
  const schema = `procs_${label}`
  const sql = postgres(url, { max: 1, onnotice: () => {} })
  return {
    args: ['postgres', url, schema],
    async completed() {
      const [{ n }] = await sql.unsafe<{ n: number }[]>(`SELECT count(*)::int AS n FROM ${schema}.runs WHERE status = 'completed'`)
      return n
    },
    close: () => sql.end(),
  }
}

function sqlitePlace(dir: string, label: string): Place {
  const file = join(dir, `${label}.db`)
  let db: DatabaseSync | undefined
  return {
    args: ['sqlite', file],
    async completed() {
      db ??= new DatabaseSync(file, { readOnly: true })
      return Number((db.prepare("SELECT count(*) AS n FROM svc_runs WHERE status = 'completed'").get() as { n: number }).n)
    },
    async close() {
      db?.close()
    },
  }
}

async function round(place: Place, count: number): Promise<Round> {
  // The first process makes the tables; the others find them made.
  const children: Child[] = []
  for (let i = 0; i < count; i++) {
    const child = startChild(place.args)
    await child.next()
    children.push(child)
  }
  const share = RUNS / count
  const t0 = performance.now()
  for (const child of children) child.send(`go ${share}`)
  await Promise.all(children.map((child) => child.next()))
  while ((await place.completed()) < RUNS) await new Promise((resolve) => setTimeout(resolve, 5))
  const seconds = (performance.now() - t0) / 1000
  const waits: number[] = []
  for (const child of children) {
    child.send('report')
    waits.push(...((await child.next()).waits as number[]))
  }
  for (const child of children) child.send('exit')
  await Promise.all(children.map((child) => new Promise((resolve) => child.proc.once('exit', resolve))))
  await place.close()
  return { rate: RUNS / seconds, p50: percentile(waits, 0.5), p99: percentile(waits, 0.99) }
}

/** The rounds of every count on places `placeOf` makes, and the lines that print them. */
async function measure(title: string, placeOf: (label: string) => Place, goal: boolean): Promise<void> {
  console.log(title)
  const figures = new Map<number, Round[]>(COUNTS.map((count) => [count, []]))
  await round(placeOf('warm'), 1)
  for (let r = 0; r < ROUNDS; r++) {
    const order = r % 2 === 0 ? COUNTS : [...COUNTS].reverse()
    for (const count of order) figures.get(count)!.push(await round(placeOf(`${r}_${count}`), count))
  }
  const one = median(figures.get(1)!.map((f) => f.rate))
  for (const count of COUNTS) {
    const rounds = figures.get(count)!
    const rate = median(rounds.map((f) => f.rate))
    const ratio = rate / one
    const verdict = goal && count === 3 ? `   goal >= ${GOAL.toFixed(1)}  ${ratio >= GOAL ? 'met' : 'MISSED'}` : ''
    console.log(
      `  ${count} ${count === 1 ? 'process  ' : 'processes'}: ${Math.round(rate).toLocaleString('en').padStart(7)} runs/s  ${ratio.toFixed(2)} x one   trigger -> start p50 ${median(
        rounds.map((f) => f.p50),
      )
        .toFixed(0)
        .padStart(5)} ms  p99 ${median(rounds.map((f) => f.p99))
        .toFixed(0)
        .padStart(5)} ms${verdict}`,
    )
  }
}

console.log(
  `processes sharing one store, Node ${process.version}: ${RUNS.toLocaleString('en')} no-op runs a round, triggered by the processes in equal shares at once; medians of ${ROUNDS} rounds`,
)
const pg = await startEmbeddedPostgres({ durable: true })
try {
  await measure('Postgres, fsync and synchronous_commit on, one schema', (label) => postgresPlace(pg.url, label), true)
} finally {
  await pg.stop()
}
const dir = mkdtempSync(join(tmpdir(), 'svc-bench-procs-'))
try {
  await measure('SQLite, one file (WAL, synchronous=FULL), shared: true', (label) => sqlitePlace(dir, label), false)
} finally {
  rmSync(dir, { recursive: true, force: true })
}
