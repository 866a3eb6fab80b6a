/**
 * Loaded before a server built for Bun or Deno by the target contract, to
 * fire a cron schedule on demand: the test writes `{ id, cron }` as a line on the server's stdin and reads back
 * `svc-cron {"id", "runs"}` on its stdout once the runs ended. It goes
 * through runScheduledTasks, as an external scheduler would, which fires the
 * tasks along the same path as a tick of the in-process scheduler.
 */
import { runScheduledTasks } from '../../src/index.ts'

let pending = ''
process.stdin.setEncoding('utf8')
process.stdin.on('data', (chunk: string) => {
  pending += chunk
  for (let end = pending.indexOf('\n'); end !== -1; end = pending.indexOf('\n')) {
    const line = pending.slice(0, end)
    pending = pending.slice(end + 1)
    if (line.trim()) void fire(JSON.parse(line))
  }
})

async function fire({ id, cron }: { id: number; cron: string }): Promise<void> {
  let answer: object
  try {
    const runs = await runScheduledTasks(cron, { wait: true })
    answer = { id, runs: runs.map((run) => ({ id: run.id, taskName: run.taskName, status: run.status })) }
  } catch (error) {
    answer = { id, error: String((error as Error)?.stack ?? error) }
  }
  process.stdout.write(`svc-cron ${JSON.stringify(answer)}\n`)
}
