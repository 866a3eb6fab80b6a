// Runs three attempts with an hour's timeout to their end, and neither
// closes the runtime nor unreferences its timers: once no attempt is in
// flight, nothing of theirs may keep the process alive.
import { createTaskRuntime } from '../../src/runtime/tasks/index.ts'

const rt = createTaskRuntime({
  routes: [
    {
      path: '/api/brief',
      module: {
        route: { kind: 'task', timeout: 3_600_000 },
        POST: () => new Promise((resolve) => setTimeout(() => resolve('ok'), 5)),
      },
    },
  ],
  logger: { info() {}, warn() {}, error: console.error },
  env: {},
})
const runs = await Promise.all([1, 2, 3].map(() => rt.trigger('brief')))
const done = await Promise.all(runs.map((run) => rt.waitForRun(run.id)))
console.log(done.map((run) => run.status).join(' '))
