/**
 * `svc runs list|get|logs|cancel|replay|wake|signal|signals|update|updates`: the task runs of a running svc
 * server, read and controlled over its task admin surface
 * (docs/http-api.md). Nothing here scans or imports the app. The filter
 * flags and the bulk form of cancel and replay are in runs-bulk.ts; signals
 * in runs-signal.ts; updates in runs-update.ts.
 */
import type { ArgsDef } from 'citty'
import type { RunLogPage } from '../../runtime/admin/run-logs.ts'
import type { RunSummary } from '../../runtime/admin/runs-query.ts'
import { isFinished } from '../../runtime/tasks/store/store.ts'
import type { CancelRunResult, RunRecord, RunStatus } from '../../types.ts'
import { checkArgs, jsonArg, parseInputArg, urlArg } from '../_args.ts'
import { UsageError } from '../_errors.ts'
import { defineCommand } from '../_define.ts'
import { formatTable, printJson, printLines } from '../_output.ts'
import { runsClient } from '../runs-client.ts'
import { droppedNote, formatDuration, formatInstant, formatLogEntry, msBetween, shortVersion } from '../runs-format.ts'
import { signal, signals } from './runs-signal.ts'
import { update, updates } from './runs-update.ts'
import { bulkArgs, bulkFilter, filterArgs, filterQuery, runBulk, runFilter } from './runs-bulk.ts'

const idArg = { id: { type: 'positional', description: 'The run id', required: true } } as const satisfies ArgsDef

/** `/__tasks/runs/<id>` and what follows it. */
function runPath(id: string, action = ''): string {
  return `/__tasks/runs/${encodeURIComponent(id)}${action}`
}

const listArgs = {
  ...filterArgs,
  limit: { type: 'string', description: 'Runs to list, from 1 to 500 (default 50)', valueHint: 'n' },
  cursor: { type: 'string', description: 'Where the page starts: the cursor the previous page printed', valueHint: 'cursor' },
  ...urlArg,
  ...jsonArg,
} as const satisfies ArgsDef

const list = defineCommand({
  meta: { name: 'list', description: 'List runs, newest first' },
  args: listArgs,
  async run({ args, rawArgs }) {
    checkArgs(rawArgs, listArgs)
    const client = runsClient('svc runs list', args.url)
    const query = filterQuery(runFilter(rawArgs, args))
    if (args.limit !== undefined) query.set('limit', args.limit)
    if (args.cursor !== undefined) query.set('cursor', args.cursor)
    const page = await client.get<{ runs: RunSummary[]; cursor?: string }>('/__tasks/runs', query)
    if (args.json) return printJson(page)
    if (page.runs.length === 0) return printLines('stdout', [query.size > 0 ? 'No runs match.' : 'No runs.'])
    // The tags column only when a listed run has tags, so that a table without them stays as narrow as before.
    const tagged = page.runs.some((run) => run.tags !== undefined && run.tags.length > 0)
    const table = formatTable(
      ['id', 'task', 'version', 'status', 'trigger', 'created', 'duration', 'attempts', ...(tagged ? ['tags'] : [])],
      page.runs.map((run) => {
        const took = run.finishedAt === undefined ? undefined : msBetween(run.startedAt, run.finishedAt)
        const row = [
          run.id,
          run.taskName,
          shortVersion(run.version),
          run.status,
          run.trigger,
          formatInstant(run.createdAt),
          took === undefined ? '-' : formatDuration(took),
          String(run.attempts),
        ]
        if (tagged) row.push(run.tags?.length ? run.tags.join(',') : '-')
        return row
      }),
    )
    const lines = [table]
    if (page.cursor !== undefined) lines.push('', `More runs: add --cursor ${page.cursor}`)
    printLines('stdout', lines)
  },
})

const getArgs = { ...idArg, ...urlArg, ...jsonArg } as const satisfies ArgsDef

const get = defineCommand({
  meta: { name: 'get', description: 'Show a run: its summary, a timeline of its attempts and steps, and its last log entries' },
  args: getArgs,
  async run({ args, rawArgs }) {
    checkArgs(rawArgs, getArgs)
    const run = await runsClient('svc runs get', args.url).get<RunRecord>(runPath(args.id))
    if (args.json) return printJson(run)
    // Loaded for the text only: `--json` has no use for it.
    const { describeRunRecord } = await import('../runs-timeline.ts')
    printLines('stdout', describeRunRecord(run))
  },
})

/** Entries asked for at once: the endpoint's largest page. */
const LOGS_PAGE = 1000
/** How often `--follow` asks for new entries. */
const FOLLOW_INTERVAL_MS = 500

const logsArgs = {
  ...idArg,
  follow: {
    type: 'boolean',
    alias: 'f',
    description: 'Keep printing new entries until the run has finished',
    default: false,
  },
  ...urlArg,
} as const satisfies ArgsDef

const logs = defineCommand({
  meta: { name: 'logs', description: 'Print the entries a run logged with ctx.log, oldest first' },
  args: logsArgs,
  async run({ args, rawArgs }) {
    checkArgs(rawArgs, logsArgs)
    const client = runsClient('svc runs logs', args.url)
    // The seq of the last entry printed: entries are numbered from 1 with no
    // gap, so a first entry past `after + 1` means the ones between are gone.
    let after = 0
    for (;;) {
      const query = new URLSearchParams({ after: String(after), limit: String(LOGS_PAGE) })
      const page = await client.get<RunLogPage>(runPath(args.id, '/logs'), query)
      const first = page.entries[0]
      if (first !== undefined && first.seq > after + 1) printLines('stderr', [droppedNote(first.seq - after - 1)])
      printLines('stdout', page.entries.map(formatLogEntry))
      if (page.entries.length > 0) after = page.entries[page.entries.length - 1].seq
      if (page.cursor !== undefined) {
        after = page.cursor
        continue
      }
      if (!args.follow || isFinished(page.status)) {
        if (after === 0 && page.dropped === 0) {
          printLines('stderr', [`Run ${page.id} (${page.taskName}, ${page.status}) has logged nothing.`])
        }
        return
      }
      await new Promise((resolve) => setTimeout(resolve, FOLLOW_INTERVAL_MS))
    }
  },
})

/** The run id of `cancel` and `replay`, which act on the runs the filter flags find without one. */
const optionalIdArg = {
  id: { type: 'positional', description: 'The run id; leave it out to act on the runs the filter flags find', required: false },
} as const satisfies ArgsDef

const cancelArgs = {
  ...optionalIdArg,
  children: {
    type: 'string',
    description:
      'Which child runs go with it: waited, the ones it waits on and theirs (the default); all, those and the runs it enqueued; none',
    valueHint: 'waited|all|none',
  },
  compensate: {
    type: 'boolean',
    description: "Run the undos of the run's completed steps first (their compensate functions); it ends cancelled once they ran",
  },
  ...filterArgs,
  ...bulkArgs,
  ...urlArg,
  ...jsonArg,
} as const satisfies ArgsDef

const cancel = defineCommand({
  meta: {
    name: 'cancel',
    description: 'Cancel a run that has not finished, and the child runs it waits on; or, without an id, the live runs a filter finds',
  },
  args: cancelArgs,
  async run({ args, rawArgs }) {
    checkArgs(rawArgs, cancelArgs)
    const filter = bulkFilter('cancel', args.id, rawArgs, args)
    if (filter !== undefined) return runBulk('cancel', filter, args)
    // bulkFilter answers undefined only when an id is given.
    const id = args.id as string
    const params = new URLSearchParams()
    if (args.children !== undefined) params.set('children', args.children)
    if (args.compensate) params.set('compensate', 'true')
    const query = params.size === 0 ? '' : `?${params}`
    const result = await runsClient('svc runs cancel', args.url).post<CancelRunResult>(runPath(id, `/cancel${query}`))
    if (args.json) return printJson(result)
    // A server of an earlier release answers without the children.
    const children = result.cancelledWith ?? []
    const undoing = result.status === 'running' ? ' It is undoing its completed steps, and ends cancelled once they ran.' : ''
    printLines('stdout', [
      children.length === 0
        ? `Cancelled run ${result.id}.${undoing}`
        : `Cancelled run ${result.id}, and the child run${children.length === 1 ? '' : 's'} ${args.children === 'all' ? 'it started' : 'it waited on'}: ${children.join(', ')}.${undoing}`,
    ])
  },
})

const replayArgs = {
  ...optionalIdArg,
  from: {
    type: 'string',
    description: 'Keep the steps recorded before this one, and run it and those after it anew (a single run only)',
    valueHint: 'step',
  },
  input: {
    type: 'string',
    description: "JSON input in place of the run's, validated against the task input schema (a single run only)",
    valueHint: 'json',
  },
  ...filterArgs,
  ...bulkArgs,
  ...urlArg,
  ...jsonArg,
} as const satisfies ArgsDef

const replay = defineCommand({
  meta: {
    name: 'replay',
    description:
      'Start a new run of the same task with the same input, from the top or from a step; or, without an id, replay the finished runs a filter finds',
  },
  args: replayArgs,
  async run({ args, rawArgs }) {
    checkArgs(rawArgs, replayArgs)
    const filter = bulkFilter('replay', args.id, rawArgs, args)
    if (filter !== undefined) {
      if (args.from !== undefined || args.input !== undefined) {
        throw new UsageError(
          '--from and --input replay a single run: give its id, as in svc runs replay <id> --from <step>. A bulk replay starts each run from the top with its own input (--since and --until filter by creation time)',
        )
      }
      return runBulk('replay', filter, args)
    }
    // bulkFilter answers undefined only when an id is given.
    const id = args.id as string
    if (args.from === '') throw new UsageError('--from needs the key of a step the run recorded, such as --from send-email')
    const input = parseInputArg(args.input)
    const body = args.from === undefined && input === undefined ? undefined : { fromStep: args.from, input }
    const result = await runsClient('svc runs replay', args.url).post<{ id: string; status: RunStatus }>(runPath(id, '/replay'), body)
    if (args.json) return printJson(result)
    const from = args.from === undefined ? '' : ` from step "${args.from}"`
    printLines('stdout', [`Replayed run ${id}${from} as run ${result.id} (${result.status}).`])
  },
})

const wakeArgs = { ...idArg, ...urlArg, ...jsonArg } as const satisfies ArgsDef

const wake = defineCommand({
  meta: { name: 'wake', description: 'Resume a run sleeping on ctx.step.sleep, or start a delayed run, now' },
  args: wakeArgs,
  async run({ args, rawArgs }) {
    checkArgs(rawArgs, wakeArgs)
    const result = await runsClient('svc runs wake', args.url).post<{ id: string; status: RunStatus }>(runPath(args.id, '/wake'))
    if (args.json) return printJson(result)
    printLines('stdout', [`Woke run ${result.id} (${result.status}).`])
  },
})

export default defineCommand({
  meta: { name: 'runs', description: 'Read and control the task runs of a running server' },
  subCommands: { list, get, logs, cancel, replay, wake, signal, signals, update, updates },
})
