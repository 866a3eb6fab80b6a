/**
 * `svc schedules list|get|create|update|pause|resume|delete|trigger|backfill`:
 * the runtime schedules of a running svc server, over its task admin surface
 * (docs/http-api.md "Schedules"). Nothing here scans or imports the app.
 */
import type { ArgsDef } from 'citty'
import type { ScheduleRecord, ScheduleTick } from '../../types.ts'
import { checkArgs, jsonArg, parseInputArg, urlArg } from '../_args.ts'
import { UsageError } from '../_errors.ts'
import { defineCommand } from '../_define.ts'
import { formatTable, printJson, printLines } from '../_output.ts'
import { runsClient } from '../runs-client.ts'
import { formatInstant } from '../runs-format.ts'

const idArg = { id: { type: 'positional', description: 'The schedule id', required: true } } as const satisfies ArgsDef
const defineArgs = {
  cron: { type: 'string', description: "Five-field cron expression, such as '0 9 * * 1'", valueHint: 'cron' },
  timezone: { type: 'string', description: 'IANA time zone the cron is read in (default UTC)', valueHint: 'zone' },
  input: { type: 'string', description: 'JSON input of each run, validated against the task input schema', valueHint: 'json' },
} as const satisfies ArgsDef

/** `/__tasks/schedules/<id>` and what follows it. */
function schedulePath(id: string, action = ''): string {
  return `/__tasks/schedules/${encodeURIComponent(id)}${action}`
}

/** One line for a schedule, as the actions print it. */
function line(schedule: ScheduleRecord, done: string): string {
  const next = schedule.nextAt === null ? 'paused, no next tick' : `next tick ${formatInstant(schedule.nextAt)}`
  return `${done} schedule ${schedule.id} of ${schedule.task} (${schedule.cron}${schedule.timezone ? ` ${schedule.timezone}` : ''}): ${next}.`
}

/** The fields `create` and `update` send, from the flags given. */
function definition(args: { cron?: string; timezone?: string; input?: string }): Record<string, unknown> {
  const body: Record<string, unknown> = {}
  if (args.cron !== undefined) body.cron = args.cron
  if (args.timezone !== undefined) body.timezone = args.timezone
  if (args.input !== undefined) body.input = parseInputArg(args.input)
  return body
}

const listArgs = {
  task: { type: 'string', description: 'Only the schedules of this task', valueHint: 'name' },
  key: { type: 'string', description: 'Only the schedules with this key', valueHint: 'key' },
  ...urlArg,
  ...jsonArg,
} as const satisfies ArgsDef

const list = defineCommand({
  meta: { name: 'list', description: 'List the runtime schedules, oldest first' },
  args: listArgs,
  async run({ args, rawArgs }) {
    checkArgs(rawArgs, listArgs)
    const query = new URLSearchParams()
    if (args.task !== undefined) query.set('task', args.task)
    if (args.key !== undefined) query.set('key', args.key)
    const page = await runsClient('svc schedules list', args.url).get<{ schedules: ScheduleRecord[] }>('/__tasks/schedules', query)
    if (args.json) return printJson(page)
    if (page.schedules.length === 0) return printLines('stdout', [query.size > 0 ? 'No schedules match.' : 'No schedules.'])
    const rows = page.schedules.map((s) => [
      s.id,
      s.task,
      s.cron,
      s.timezone ?? 'UTC',
      s.key ?? '-',
      s.nextAt === null ? 'paused' : formatInstant(s.nextAt),
      s.lastRunId ?? '-',
    ])
    printLines('stdout', [formatTable(['id', 'task', 'cron', 'timezone', 'key', 'next', 'last run'], rows)])
  },
})

const getArgs = { ...idArg, ...urlArg, ...jsonArg } as const satisfies ArgsDef

const get = defineCommand({
  meta: { name: 'get', description: 'Show a schedule' },
  args: getArgs,
  async run({ args, rawArgs }) {
    checkArgs(rawArgs, getArgs)
    const schedule = await runsClient('svc schedules get', args.url).get<ScheduleRecord>(schedulePath(args.id))
    if (args.json) return printJson(schedule)
    printLines('stdout', [line(schedule, schedule.enabled ? 'Enabled' : 'Paused'), `Input: ${JSON.stringify(schedule.input ?? null)}`])
  },
})

const createArgs = {
  task: { type: 'positional', description: 'The task each tick runs, in dot form', required: true },
  ...defineArgs,
  key: { type: 'string', description: 'Names the schedule within its task; a second create with the key updates it', valueHint: 'key' },
  paused: { type: 'boolean', description: 'Make it paused', default: false },
  ...urlArg,
  ...jsonArg,
} as const satisfies ArgsDef

const create = defineCommand({
  meta: { name: 'create', description: 'Make a schedule, or update the one of the same task and key' },
  args: createArgs,
  async run({ args, rawArgs }) {
    checkArgs(rawArgs, createArgs)
    if (args.cron === undefined) throw new UsageError("svc schedules create needs --cron, such as --cron '0 9 * * 1'")
    const body = { ...definition(args), ...(args.key === undefined ? {} : { key: args.key }), ...(args.paused ? { enabled: false } : {}) }
    const made = await runsClient('svc schedules create', args.url).post<ScheduleRecord>(
      `/__tasks/${encodeURIComponent(args.task)}/schedules`,
      body,
    )
    if (args.json) return printJson(made)
    printLines('stdout', [line(made, 'Made')])
  },
})

const updateArgs = { ...idArg, ...defineArgs, ...urlArg, ...jsonArg } as const satisfies ArgsDef

const update = defineCommand({
  meta: { name: 'update', description: "Change a schedule's cron, time zone or input" },
  args: updateArgs,
  async run({ args, rawArgs }) {
    checkArgs(rawArgs, updateArgs)
    const body = definition(args)
    if (Object.keys(body).length === 0) throw new UsageError('svc schedules update needs --cron, --timezone or --input')
    const changed = await runsClient('svc schedules update', args.url).patch<ScheduleRecord>(schedulePath(args.id), body)
    if (args.json) return printJson(changed)
    printLines('stdout', [line(changed, 'Changed')])
  },
})

/** `pause` and `resume`: a POST to the action, printing the schedule. */
function toggle(action: 'pause' | 'resume', description: string, done: string) {
  const toggleArgs = { ...idArg, ...urlArg, ...jsonArg } as const satisfies ArgsDef
  return defineCommand({
    meta: { name: action, description },
    args: toggleArgs,
    async run({ args, rawArgs }) {
      checkArgs(rawArgs, toggleArgs)
      const schedule = await runsClient(`svc schedules ${action}`, args.url).post<ScheduleRecord>(schedulePath(args.id, `/${action}`))
      if (args.json) return printJson(schedule)
      printLines('stdout', [line(schedule, done)])
    },
  })
}

const deleteArgs = { ...idArg, ...urlArg, ...jsonArg } as const satisfies ArgsDef

const remove = defineCommand({
  meta: { name: 'delete', description: 'Remove a schedule; its runs stay' },
  args: deleteArgs,
  async run({ args, rawArgs }) {
    checkArgs(rawArgs, deleteArgs)
    const answer = await runsClient('svc schedules delete', args.url).delete<{ id: string; deleted: true }>(schedulePath(args.id))
    if (args.json) return printJson(answer)
    printLines('stdout', [`Deleted schedule ${answer.id}.`])
  },
})

const triggerArgs = { ...idArg, ...urlArg, ...jsonArg } as const satisfies ArgsDef

const trigger = defineCommand({
  meta: { name: 'trigger', description: 'Start a run of a schedule now, as a tick at this instant would' },
  args: triggerArgs,
  async run({ args, rawArgs }) {
    checkArgs(rawArgs, triggerArgs)
    const tick = await runsClient('svc schedules trigger', args.url).post<ScheduleTick>(schedulePath(args.id, '/trigger'))
    if (args.json) return printJson(tick)
    printLines('stdout', [`Started run ${tick.runId} for the tick of ${formatInstant(tick.tick)}.`])
  },
})

const backfillArgs = {
  ...idArg,
  from: { type: 'string', description: 'The first instant of the range (ISO 8601), included', valueHint: 'time', required: true },
  to: { type: 'string', description: 'The end of the range (ISO 8601), left out', valueHint: 'time', required: true },
  ...urlArg,
  ...jsonArg,
} as const satisfies ArgsDef

const backfill = defineCommand({
  meta: { name: 'backfill', description: 'Start one run per tick of a schedule in a range of time, each once' },
  args: backfillArgs,
  async run({ args, rawArgs }) {
    checkArgs(rawArgs, backfillArgs)
    const client = runsClient('svc schedules backfill', args.url)
    const { runs } = await client.post<{ runs: ScheduleTick[] }>(schedulePath(args.id, '/backfill'), { from: args.from, to: args.to })
    if (args.json) return printJson({ runs })
    if (runs.length === 0) return printLines('stdout', ['No tick falls in that range.'])
    printLines('stdout', [
      formatTable(
        ['tick', 'run'],
        runs.map((tick) => [formatInstant(tick.tick), tick.runId]),
      ),
    ])
  },
})

export default defineCommand({
  meta: { name: 'schedules', description: 'Make, change and run the runtime schedules of a running server' },
  subCommands: {
    list,
    get,
    create,
    update,
    pause: toggle('pause', 'Pause a schedule: its ticks start no run until it is resumed', 'Paused'),
    resume: toggle('resume', 'Resume a paused schedule from its next tick', 'Resumed'),
    delete: remove,
    trigger,
    backfill,
  },
})
