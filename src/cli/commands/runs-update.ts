/**
 * `svc runs update <id> <name> [data]`: sends an update to a run of a
 * running svc server and prints the run's answer
 * (`POST /__tasks/runs/<id>/updates/<name>`, docs/tasks.md "Updates"),
 * with `--update-id` as its id and `--timeout` as how long to wait; and
 * `svc runs updates <id>`, which lists the updates a run holds.
 */
import type { ArgsDef } from 'citty'
import { type EnvLike, processEnv } from '../../runtime/env.ts'
import { taskRequestTimeout } from '../../runtime/tasks/client/client.ts'
import { UPDATE_REQUEST_MARGIN_MS } from '../../runtime/tasks/client/update-over-http.ts'
import { DEFAULT_UPDATE_TIMEOUT_SECONDS, MAX_UPDATE_TIMEOUT_SECONDS, timeoutSecondsOf } from '../../runtime/tasks/engine/update-sends.ts'
import type { UpdateRecord } from '../../types.ts'
import { checkArgs, jsonArg, parseJsonArg, urlArg } from '../_args.ts'
import { ExitCode, UsageError } from '../_errors.ts'
import { defineCommand } from '../_define.ts'
import { formatTable, printJson, printLines } from '../_output.ts'
import { runsClient } from '../runs-client.ts'
import { formatInstant, oneLine } from '../runs-format.ts'

/** The exit code of an update the run has not answered yet: kept, to be asked for again. */
export const PENDING_EXIT_CODE = 2

const updateArgs = {
  id: { type: 'positional', description: 'The run id', required: true },
  name: { type: 'positional', description: 'The update name, such as add-item', required: true },
  data: { type: 'positional', description: 'The update data, one JSON value quoted for the shell (none: no data)', required: false },
  'update-id': {
    type: 'string',
    description: 'The update id, which makes sending it again safe: the run answers it once, and asking again gets that answer',
    valueHint: 'id',
  },
  timeout: {
    type: 'string',
    description: `How long to wait for the answer, in seconds (default ${DEFAULT_UPDATE_TIMEOUT_SECONDS}, at most ${MAX_UPDATE_TIMEOUT_SECONDS})`,
    valueHint: 'seconds',
  },
  ...urlArg,
  ...jsonArg,
} as const satisfies ArgsDef

/** The server's answer to an update: 200 `completed`, or 202 `pending` past the timeout. */
interface UpdateAnswerBody {
  id: string
  runId: string
  name: string
  status: 'completed' | 'pending'
  result?: unknown
  error?: string
}

export const update = defineCommand({
  meta: { name: 'update', description: "Send an update to a run and print its answer, what the run's ctx.onUpdate handler returned" },
  args: updateArgs,
  async run({ args, rawArgs }) {
    checkArgs(rawArgs, updateArgs)
    const seconds = args.timeout === undefined ? undefined : timeoutSeconds(args.timeout)
    const data = args.data === undefined ? undefined : parseJsonArg(args.data, 'The update data', `'{"ok":true}' or '"some text"'`)
    const query = seconds === undefined ? '' : `?timeout=${seconds}`
    const path = `/__tasks/runs/${encodeURIComponent(args.id)}/updates/${encodeURIComponent(args.name)}${query}`
    const key = args['update-id']
    const client = runsClient('svc runs update', args.url, waitingEnv(processEnv(), seconds ?? DEFAULT_UPDATE_TIMEOUT_SECONDS))
    const answer = await client.post<UpdateAnswerBody>(path, data, key === undefined ? {} : { 'idempotency-key': key })
    if (answer.status === 'pending') {
      if (args.json) printJson(answer)
      const again = ['svc', 'runs', 'update', args.id, args.name, '--update-id', answer.id].map(shellWord).join(' ')
      printLines('stderr', [
        `Update "${answer.name}" (${answer.id}) is pending: run ${answer.runId} has not answered it yet. It is kept, and the run may still answer it.`,
        `Ask for its answer again with: ${again}`,
      ])
      throw new ExitCode(PENDING_EXIT_CODE)
    }
    if (args.json) return printJson(answer)
    if (!('result' in answer)) {
      return printLines('stdout', [`Run ${answer.runId} answered update "${answer.name}" (${answer.id}) with no result.`])
    }
    printJson(answer.result)
  },
})

const listArgs = {
  id: { type: 'positional', description: 'The run id', required: true },
  ...urlArg,
  ...jsonArg,
} as const satisfies ArgsDef

export const updates = defineCommand({
  meta: { name: 'updates', description: 'List the updates a run holds, oldest first, each with its answer once it has one' },
  args: listArgs,
  async run({ args, rawArgs }) {
    checkArgs(rawArgs, listArgs)
    const path = `/__tasks/runs/${encodeURIComponent(args.id)}/updates`
    const { updates: held } = await runsClient('svc runs updates', args.url).get<{ updates: UpdateRecord[] }>(path)
    if (args.json) return printJson({ updates: held })
    if (held.length === 0) return printLines('stdout', ['No updates.'])
    const rows = held.map((u) => [
      u.id,
      u.name,
      u.status,
      formatInstant(u.sentAt),
      u.answeredAt === undefined ? '-' : formatInstant(u.answeredAt),
      outcome(u),
    ])
    printLines('stdout', [formatTable(['id', 'name', 'status', 'sent', 'answered', 'result / error'], rows)])
  },
})

/** The environment with a request timeout longer than the server holds the update for. */
function waitingEnv(env: EnvLike, seconds: number): EnvLike {
  const ms = Math.max(taskRequestTimeout(env), seconds * 1000 + UPDATE_REQUEST_MARGIN_MS)
  return { ...env, SVC_TASK_TIMEOUT_MS: String(ms) }
}

function timeoutSeconds(raw: string): number {
  const seconds = timeoutSecondsOf(raw)
  if (seconds !== undefined) return seconds
  throw new UsageError(
    `--timeout must be a number of seconds above 0 and at most ${MAX_UPDATE_TIMEOUT_SECONDS} (got ${JSON.stringify(raw)})`,
  )
}

/** A completed update's result, or why it has none: `CODE: message`. */
function outcome(u: UpdateRecord): string {
  if (u.status === 'pending') return '-'
  if (u.error) {
    const text = `${u.error.code}: ${u.error.message}`.replace(/\s+/g, ' ')
    return text.length > 80 ? `${text.slice(0, 79)}…` : text
  }
  return u.result === undefined ? '-' : oneLine(u.result, 60)
}

/** `word` as one shell word: as it is when it is plain, else in single quotes. */
function shellWord(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replaceAll("'", `'"'"'`)}'`
}
