/**
 * One process of `bench/processes.ts`: a task runtime on the shared
 * Postgres schema. It reads commands from stdin, one per line, and answers
 * on stdout, one JSON line each:
 * - `go <n>`: triggers `n` no-op runs at once, each carrying the time it
 *   was triggered, and answers `{ triggered }` once they are recorded;
 * - `report`: answers `{ waits }`, the milliseconds from trigger to the
 *   handler's first line of every run this process started, whoever
 *   triggered it (runs are leased to the process that records them, and
 *   one whose process is busy or gone goes to another);
 * - `exit`: closes the runtime and exits.
 * Usage: node bench/_processes-child.ts postgres <URL> <schema>, or
 * node bench/_processes-child.ts sqlite <file> (opened with `shared: true`).
 */
import { createInterface } from 'node:readline'
import { SqliteRunStore } from '../src/node.ts'
import { PostgresRunStore } from '../src/postgres.ts'
import { createTaskRuntime } from '../src/runtime/tasks/index.ts'
import type { TaskContext } from '../src/types.ts'

const [kind, where, schema] = process.argv.slice(2)
const waits: number[] = []
const store =
  kind === 'postgres'
    ? new PostgresRunStore({ url: where, schema, maxRuns: 1_000_000 })
    : new SqliteRunStore({ path: where, shared: true, maxRuns: 1_000_000 })
if (store instanceof PostgresRunStore) await store.ready()
const runtime = createTaskRuntime({
  store,
  logger: { info() {}, warn() {}, error: (...args) => console.error(...args) },
  routes: [
    {
      path: '/api/noop',
      module: { kind: 'task', POST: (ctx: TaskContext<{ at: number }>) => void waits.push(Date.now() - ctx.input.at) },
    },
  ],
})
await runtime.recover()
const say = (value: unknown) => process.stdout.write(`${JSON.stringify(value)}\n`)
say({ ready: true })

for await (const line of createInterface({ input: process.stdin })) {
  const [command, arg] = line.split(' ')
  if (command === 'go') {
    const at = Date.now()
    await Promise.all(Array.from({ length: Number(arg) }, () => runtime.trigger('noop', { at })))
    say({ triggered: Number(arg) })
  } else if (command === 'report') {
    say({ waits })
  } else if (command === 'exit') {
    await runtime.close()
    await store.close()
    process.exit(0)
  }
}
