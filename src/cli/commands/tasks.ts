/**
 * `svc tasks list` and `svc tasks run <name>`: the app's tasks, from the
 * command line; `svc tasks fire <name>`: a tick of a task's schedule, now,
 * on a running server.
 */
import type { ArgsDef } from 'citty'
import { defineCommand } from '../_define.ts'
import type { ManifestRoute, RouteModule, RunRecord, RunStatus } from '../../types.ts'
import { checkArgs, jsonArg, parseInputArg, resolveRoot, rootArg, urlArg } from '../_args.ts'
import { ExitCode } from '../_errors.ts'
import { formatTable, printJson, printLines } from '../_output.ts'
import { scanValidApp } from '../_scan.ts'

const listArgs = { ...rootArg, ...jsonArg }

async function scanTasks(root: string): Promise<ManifestRoute[]> {
  const scan = await scanValidApp(root)
  return scan.routes.filter((route) => route.kind === 'task')
}

const list = defineCommand({
  meta: { name: 'list', description: 'List the tasks with their schedule, events, retries, timeout and flow limits' },
  args: listArgs,
  async run({ args, rawArgs }) {
    checkArgs(rawArgs, listArgs)
    const tasks = await scanTasks(resolveRoot(args.root))
    const rows = tasks.map(({ name, path, schedule, timezone, on, retries, timeout, flow }) => ({
      name: name!,
      path,
      schedule,
      timezone,
      on,
      retries: retries!,
      timeout: timeout!,
      flow,
    }))
    if (args.json) return printJson({ tasks: rows })
    if (rows.length === 0) return printLines('stdout', ['No tasks found.'])
    // Loaded for the table only, and only when a task has limits (a task without any has `flow: {}`).
    const limited = rows.some((t) => t.flow !== null && Object.keys(t.flow).length > 0)
    const describeFlow = limited ? (await import('../../runtime/tasks/flow/flow.ts')).describeFlow : () => '-'
    printLines('stdout', [
      formatTable(
        ['name', 'path', 'schedule', 'on', 'retries', 'timeout', 'flow'],
        rows.map((t) => [
          t.name,
          t.path,
          t.schedule === null ? '-' : t.timezone === null ? t.schedule : `${t.schedule} (${t.timezone})`,
          t.on?.join(',') ?? '-',
          String(t.retries),
          `${t.timeout} ms`,
          describeFlow(t.flow),
        ]),
      ),
    ])
  },
})

const runArgs = {
  name: { type: 'positional', description: 'Dot-form task name, such as jobs.notify', required: true },
  input: { type: 'string', description: 'JSON payload, validated against the task input schema', valueHint: 'json' },
  ...rootArg,
  ...jsonArg,
} as const

const run = defineCommand({
  meta: { name: 'run', description: 'Run a task in-process to its end and print the run envelope' },
  args: runArgs,
  async run({ args, rawArgs }) {
    checkArgs(rawArgs, runArgs)
    const root = resolveRoot(args.root)
    const payload = parseInputArg(args.input)
    // With --json, stdout carries the envelope and nothing else: what the
    // app's modules and handlers log through console goes to stderr.
    // node:console is loaded here only: it brings a dozen built-in modules that `tasks list` has no use for.
    if (args.json) {
      const { Console } = await import('node:console')
      globalThis.console = new Console({ stdout: process.stderr, stderr: process.stderr })
    }
    const tasks = await scanTasks(root)
    if (!tasks.some((task) => task.name === args.name)) {
      const names = tasks.map((task) => task.name).join(', ')
      throw new Error(`Unknown task "${args.name}". ${names ? `Available tasks: ${names}.` : 'The app has no tasks.'}`)
    }
    const [{ createAppImporter }, { createTaskRuntime, setActiveTaskRuntime }, { ValidationError }, { toEnvelope }] = await Promise.all([
      import('../../node/loaders.ts'),
      import('../../runtime/tasks/index.ts'),
      import('../../runtime/errors.ts'),
      import('../../runtime/envelope.ts'),
    ])
    // Logs go to stderr so that `--json` output on stdout stays parseable.
    const logger = { info: console.error, warn: console.error, error: console.error }
    // Only task routes are imported: the runtime registers nothing else, and
    // HTTP and hot route modules would run their load-time code (timers,
    // sockets, connections) for nothing, or fail and stop every task.
    const load = createAppImporter(root)
    const routes = await Promise.all(tasks.map(async (task) => ({ ...task, module: await load<RouteModule>(task.file) })))
    const runtime = createTaskRuntime({ routes, logger })
    // Tasks that enqueue others (or wait for them) dispatch in this process.
    setActiveTaskRuntime(runtime)
    let finished: RunRecord
    try {
      const started = await runtime.trigger(args.name, payload)
      finished = await runtime.waitForRun(started.id)
    } catch (error) {
      if (error instanceof ValidationError) {
        // The CLI's form of the HTTP 400 VALIDATION_FAILED.
        printLines('stderr', [
          `${error.code}: ${error.message}`,
          ...error.details.map((d) => `  ${[d.target, ...d.path].join('.')}: ${d.message}`),
        ])
        throw new ExitCode(1)
      }
      throw error
    } finally {
      await runtime.close()
    }
    const envelope = toEnvelope(finished)
    if (args.json) printJson(envelope)
    else printLines('stdout', describeRun(envelope))
    if (!envelope.ok) throw new ExitCode(1)
  },
})

function describeRun(envelope: ReturnType<typeof import('../../runtime/envelope.ts').toEnvelope>): string[] {
  const lines = [`${envelope.taskName}: ${envelope.ok ? 'completed' : 'failed'} after ${envelope.attempts.length} attempt(s)`]
  for (const attempt of envelope.attempts) {
    lines.push(
      `  attempt ${attempt.index}  ${attempt.startedAt}  ${Math.round(attempt.durationMs)} ms${attempt.error ? `  error: ${attempt.error}` : ''}`,
    )
  }
  for (const [key, step] of Object.entries(envelope.steps)) lines.push(`  step ${key}: ${step.status}`)
  if ('result' in envelope) lines.push(`result: ${JSON.stringify(envelope.result, null, 2)}`)
  return lines
}

const fireArgs = {
  name: { type: 'positional', description: 'Dot-form name of a task with a schedule, such as jobs.nightly', required: true },
  ...urlArg,
  ...jsonArg,
} as const satisfies ArgsDef

const fire = defineCommand({
  meta: { name: 'fire', description: 'Start a run of a scheduled task on a running server now, as a tick of its schedule would' },
  args: fireArgs,
  async run({ args, rawArgs }) {
    checkArgs(rawArgs, fireArgs)
    // Loaded here only: `tasks list` and `tasks run` never talk to a server.
    const { runsClient } = await import('../runs-client.ts')
    const result = await runsClient('svc tasks fire', args.url).post<{ id: string; status: RunStatus }>(
      `/__tasks/${encodeURIComponent(args.name)}/fire`,
    )
    if (args.json) return printJson(result)
    printLines('stdout', [`Fired ${args.name} as run ${result.id} (${result.status}).`])
  },
})

export default defineCommand({
  meta: { name: 'tasks', description: 'List, run and fire the app tasks' },
  subCommands: { list, run, fire },
})
