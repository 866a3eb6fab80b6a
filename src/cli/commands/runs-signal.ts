/**
 * `svc runs signal <id> <name> [data]`: sends a signal to a run of a
 * running svc server (`POST /__tasks/runs/<id>/signals/<name>`, docs/tasks.md
 * "Signals"), with `--id` as its id, and `svc runs signals <id>`, which
 * lists the signals a run holds.
 */
import type { ArgsDef } from 'citty'
import type { SentSignal, SignalRecord } from '../../types.ts'
import { checkArgs, jsonArg, parseJsonArg, urlArg } from '../_args.ts'
import { defineCommand } from '../_define.ts'
import { formatTable, printJson, printLines } from '../_output.ts'
import { runsClient } from '../runs-client.ts'
import { formatInstant, oneLine } from '../runs-format.ts'

const signalArgs = {
  id: { type: 'positional', description: 'The run id', required: true },
  name: { type: 'positional', description: 'The signal name, such as approval', required: true },
  data: { type: 'positional', description: 'The signal data, one JSON value quoted for the shell (none: no data)', required: false },
  'signal-id': {
    type: 'string',
    description: 'The signal id, which makes sending it again safe: the run keeps one signal per id',
    valueHint: 'id',
  },
  ...urlArg,
  ...jsonArg,
} as const satisfies ArgsDef

export const signal = defineCommand({
  meta: { name: 'signal', description: 'Send a signal to a run, which its ctx.step.waitForSignal for that name takes' },
  args: signalArgs,
  async run({ args, rawArgs }) {
    checkArgs(rawArgs, signalArgs)
    const data = args.data === undefined ? undefined : parseJsonArg(args.data, 'The signal data', `'{"ok":true}' or '"some text"'`)
    const path = `/__tasks/runs/${encodeURIComponent(args.id)}/signals/${encodeURIComponent(args.name)}`
    const key = args['signal-id']
    const sent = await runsClient('svc runs signal', args.url).post<SentSignal>(
      path,
      data,
      key === undefined ? {} : { 'idempotency-key': key },
    )
    if (args.json) return printJson(sent)
    const what = sent.duplicate ? `was sent before as ${sent.id}; the run keeps it once` : `sent to run ${sent.runId} as ${sent.id}`
    printLines('stdout', [`Signal "${sent.name}" ${what}.`])
  },
})

const listArgs = {
  id: { type: 'positional', description: 'The run id', required: true },
  ...urlArg,
  ...jsonArg,
} as const satisfies ArgsDef

export const signals = defineCommand({
  meta: { name: 'signals', description: 'List the signals a run holds, oldest first, and the wait that took each' },
  args: listArgs,
  async run({ args, rawArgs }) {
    checkArgs(rawArgs, listArgs)
    const path = `/__tasks/runs/${encodeURIComponent(args.id)}/signals`
    const { signals: held } = await runsClient('svc runs signals', args.url).get<{ signals: SignalRecord[] }>(path)
    if (args.json) return printJson({ signals: held })
    if (held.length === 0) return printLines('stdout', ['No signals.'])
    const taken = (signal: SignalRecord) => (signal.takenBy === undefined ? '-' : signal.takenBy.split(':').slice(1, -1).join(':'))
    const rows = held.map((signal) => [
      signal.id,
      signal.name,
      formatInstant(signal.sentAt),
      taken(signal),
      signal.data === undefined ? '-' : oneLine(signal.data, 60),
    ])
    printLines('stdout', [formatTable(['id', 'name', 'sent', 'taken by step', 'data'], rows)])
  },
})
