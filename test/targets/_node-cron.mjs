/**
 * Preloaded (`node --import`) into the built node server by the target
 * contract, to fire a cron schedule on demand: the parent sends
 * `{ id, cron }` over IPC and gets back the runs once they ended. It goes
 * through runScheduledTasks, as an external scheduler would, which fires
 * the tasks along the same path as a tick of the in-process scheduler.
 */
import { runScheduledTasks } from '../../src/index.ts'

process.on('message', async ({ id, cron }) => {
  try {
    const runs = await runScheduledTasks(cron, { wait: true })
    process.send({ id, runs: runs.map((run) => ({ id: run.id, taskName: run.taskName, status: run.status })) })
  } catch (error) {
    process.send({ id, error: String(error?.stack ?? error) })
  }
})

// The channel must not keep alive a server that was told to stop.
process.channel?.unref()
