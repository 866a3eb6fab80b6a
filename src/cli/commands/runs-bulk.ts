/**
 * The run filter flags of `svc runs list|cancel|replay`, and the bulk form
 * of `svc runs cancel` and `svc runs replay`: without a run id they act on
 * the runs the filter finds, over `POST /__tasks/runs/cancel|replay`
 * (docs/http-api.md). Without `--yes` that is a dry run, which lists the
 * runs and changes nothing; with it, every page the server hands out.
 *
 * Creation time is `--since`/`--until` on all three commands, since
 * `--from` already names the step a single replay starts from.
 */
import type { ArgsDef } from 'citty'
import type { BulkAction, BulkItem, BulkResult, RunFilter } from '../../runtime/admin/bulk-runs.ts'
import { ExitCode, UsageError } from '../_errors.ts'
import { formatTable, printJson, printLines } from '../_output.ts'
import { runsClient } from '../runs-client.ts'

export const filterArgs = {
  task: { type: 'string', description: 'Only the runs of this task (dot form, such as jobs.notify)', valueHint: 'name' },
  status: {
    type: 'string',
    description: 'Only the runs in this status; repeat the flag or separate statuses with commas',
    valueHint: 'status',
  },
  version: { type: 'string', description: "Only the runs on this version of their task's code", valueHint: 'version' },
  tag: {
    type: 'string',
    description: 'Only the runs holding this tag; repeat the flag or separate tags with commas (a run must hold every one)',
    valueHint: 'tag',
  },
  metadata: {
    type: 'string',
    description: 'Only the runs whose metadata key holds this value (its text, for a number or a boolean); repeatable',
    valueHint: 'key=value',
  },
  since: {
    type: 'string',
    description: 'Only the runs created at this instant or later: ISO 8601, epoch ms, or a time ago such as 30m, 2h, 7d',
    valueHint: 'instant',
  },
  until: { type: 'string', description: 'Only the runs created before this instant (the forms of --since)', valueHint: 'instant' },
} as const satisfies ArgsDef

/** The flags of the bulk form, besides the filter. */
export const bulkArgs = {
  limit: { type: 'string', description: 'Runs per request in bulk mode, from 1 to 1000 (default 100)', valueHint: 'n' },
  yes: {
    type: 'boolean',
    alias: 'y',
    description: 'Act on the runs the filter finds; without it, list them and change nothing',
    default: false,
  },
} as const satisfies ArgsDef

const FILTER_FLAGS = Object.keys(filterArgs) as (keyof typeof filterArgs)[]

/** Every value given to `--<name>`, in order: citty keeps only the last of a repeated flag. */
export function flagValues(rawArgs: readonly string[], name: string): string[] {
  const values: string[] = []
  for (let i = 0; i < rawArgs.length; i++) {
    const arg = rawArgs[i]
    if (arg === '--') break
    if (arg === `--${name}`) values.push(rawArgs[++i])
    else if (arg.startsWith(`--${name}=`)) values.push(arg.slice(name.length + 3))
  }
  return values
}

/** The values of a repeatable flag that also takes a comma-separated list, trimmed, empty ones dropped. */
function listValues(rawArgs: readonly string[], name: string): string[] | undefined {
  const values = flagValues(rawArgs, name)
    .flatMap((value) => value.split(','))
    .map((value) => value.trim())
    .filter((value) => value !== '')
  return values.length === 0 ? undefined : values
}

/** The filter flags given on the command line, as `--name`. */
function givenFilterFlags(rawArgs: readonly string[]): string[] {
  return FILTER_FLAGS.filter((name) => flagValues(rawArgs, name).length > 0).map((name) => `--${name}`)
}

/** The filter the flags ask for; every field is absent when its flag is. */
export function runFilter(
  rawArgs: readonly string[],
  args: { task?: string; version?: string; since?: string; until?: string },
): RunFilter {
  const filter: RunFilter = {}
  if (args.task !== undefined) filter.task = args.task
  const status = listValues(rawArgs, 'status')
  if (status !== undefined) filter.status = status
  if (args.version !== undefined) filter.version = args.version
  const tag = listValues(rawArgs, 'tag')
  if (tag !== undefined) filter.tag = tag
  const pairs = flagValues(rawArgs, 'metadata')
  if (pairs.length > 0) {
    const metadata: Record<string, string> = {}
    for (const pair of pairs) {
      const at = pair.indexOf('=')
      if (at < 1) throw new UsageError(`--metadata takes key=value, such as --metadata stage=sent (got ${JSON.stringify(pair)})`)
      const key = pair.slice(0, at)
      if (Object.hasOwn(metadata, key))
        throw new UsageError(`--metadata ${key} is given twice: a run holds one value for a key, so give it once`)
      metadata[key] = pair.slice(at + 1)
    }
    filter.metadata = metadata
  }
  if (args.since !== undefined) filter.from = instantFlag('since', args.since)
  if (args.until !== undefined) filter.to = instantFlag('until', args.until)
  return filter
}

/** The filter as the query of `GET /__tasks/runs`. */
export function filterQuery(filter: RunFilter): URLSearchParams {
  const query = new URLSearchParams()
  if (filter.task !== undefined) query.set('task', filter.task)
  for (const status of filter.status ?? []) query.append('status', status)
  if (filter.version !== undefined) query.set('version', filter.version)
  for (const tag of filter.tag ?? []) query.append('tag', tag)
  for (const [key, value] of Object.entries(filter.metadata ?? {})) query.set(`metadata.${key}`, value)
  if (filter.from !== undefined) query.set('from', filter.from)
  if (filter.to !== undefined) query.set('to', filter.to)
  return query
}

const AGO_UNITS_MS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }

/** `--since` or `--until` as an ISO instant: an instant as it is, epoch ms, or a time ago (`30m`) counted back from now. */
function instantFlag(name: 'since' | 'until', value: string): string {
  const ago = /^(\d+)([smhd])$/.exec(value)
  const ms = ago ? Date.now() - Number(ago[1]) * AGO_UNITS_MS[ago[2]] : /^\d+$/.test(value) ? Number(value) : Date.parse(value)
  if (!Number.isFinite(ms) || Number.isNaN(new Date(ms).getTime())) {
    throw new UsageError(
      `--${name} must be an instant: ISO 8601 such as 2026-11-29T00:00:00Z, epoch milliseconds, or a time ago such as 30m, 2h or 7d (got ${JSON.stringify(value)})`,
    )
  }
  return new Date(ms).toISOString()
}

/**
 * The filter of a bulk `cancel` or `replay`, or `undefined` for the
 * single-run form (a run id and no filter flag). Either needs one of the
 * two and refuses both, and bulk-only flags in the single form.
 */
export function bulkFilter(
  action: BulkAction,
  id: string | undefined,
  rawArgs: readonly string[],
  args: { task?: string; version?: string; since?: string; until?: string; limit?: string },
): RunFilter | undefined {
  const given = givenFilterFlags(rawArgs)
  if (id !== undefined) {
    if (given.length > 0) {
      throw new UsageError(
        `svc runs ${action} takes a run id or filter flags, not both: drop ${given.join(', ')} to ${action} run ${id} alone, or drop the id to ${action} the runs the filter finds`,
      )
    }
    if (args.limit !== undefined) throw new UsageError(`--limit is the page size of a bulk ${action}: drop it to ${action} run ${id} alone`)
    return undefined
  }
  if (given.length === 0) {
    throw new UsageError(
      `svc runs ${action} needs a run id, or filter flags (--task, --status, --tag, --metadata, --since, --until, --version) to ${action} the runs they find, such as svc runs ${action} --tag tenant:acme`,
    )
  }
  const filter = runFilter(rawArgs, args)
  if (Object.keys(filter).length === 0) {
    throw new UsageError(`${given.join(', ')} name no value: give a value to filter on, such as --tag tenant:acme`)
  }
  return filter
}

// The server's own (bulk-runs.ts), repeated so that the CLI loads none of the runtime to check --limit.
const DEFAULT_BULK_LIMIT = 100
const MAX_BULK_LIMIT = 1000

interface BulkFlags {
  url?: string
  json: boolean
  yes: boolean
  limit?: string
  children?: string
}

/** What an action did to a run, as its outcome names it. */
const PAST: Record<BulkAction, string> = { cancel: 'cancelled', replay: 'replayed' }

/**
 * Runs a bulk `action` on the runs `filter` finds: a dry run of one page
 * without `--yes`; with it, page after page until the server hands out no
 * cursor. Exits 1 when a run failed.
 */
export async function runBulk(action: BulkAction, filter: RunFilter, flags: BulkFlags): Promise<void> {
  const client = runsClient(`svc runs ${action}`, flags.url)
  const limit = bulkLimit(flags.limit)
  const body: Record<string, unknown> = { filter, limit }
  if (flags.children !== undefined) body.children = flags.children
  const path = `/__tasks/runs/${action}`
  if (!flags.yes) {
    const result = await client.post<BulkResult>(path, { ...body, dryRun: true })
    if (flags.json) return printJson(result)
    return printLines('stdout', dryRunLines(action, result))
  }
  const runs: BulkItem[] = []
  let cursor: string | undefined
  for (;;) {
    const result = await client.post<BulkResult>(path, cursor === undefined ? body : { ...body, cursor })
    runs.push(...result.runs)
    if (!flags.json)
      printLines(
        'stdout',
        result.runs.map((item) => itemLine(action, item)),
      )
    // A cursor the server handed back unchanged would list the same page again.
    if (result.cursor === undefined || result.cursor === cursor) break
    cursor = result.cursor
  }
  const totals = { [PAST[action]]: 0, skipped: 0, failed: 0 }
  for (const item of runs) if (item.outcome !== undefined) totals[item.outcome] = (totals[item.outcome] ?? 0) + 1
  if (flags.json) printJson({ action, dryRun: false, matched: runs.length, runs, totals })
  else printLines('stdout', [totalLine(action, runs.length, totals)])
  if (totals.failed > 0) throw new ExitCode(1)
}

function bulkLimit(raw: string | undefined): number {
  if (raw === undefined) return DEFAULT_BULK_LIMIT
  const n = /^\d{1,4}$/.test(raw) ? Number(raw) : Number.NaN
  if (!(n >= 1 && n <= MAX_BULK_LIMIT))
    throw new UsageError(`--limit must be a whole number from 1 to ${MAX_BULK_LIMIT} (got ${JSON.stringify(raw)})`)
  return n
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`
}

/** The runs a dry run found, and what `--yes` would do. */
function dryRunLines(action: BulkAction, result: BulkResult): string[] {
  const past = PAST[action]
  if (result.runs.length === 0) return [`No runs match: nothing would be ${past}.`]
  const table = formatTable(
    ['id', 'task', 'status'],
    result.runs.map((run) => [run.id, run.taskName, run.status]),
  )
  const count = plural(result.runs.length, 'run')
  const them = result.runs.length === 1 ? 'it' : 'them'
  const summary =
    result.cursor === undefined
      ? `${count} would be ${past}; run again with --yes to ${action} ${them}.`
      : `At least ${count} would be ${past}, and more may match (a dry run lists one page of --limit); run again with --yes to ${action} them all.`
  return [table, '', summary]
}

/** What became of one run, on one line. */
function itemLine(action: BulkAction, item: BulkItem): string {
  const run = `run ${item.id} (${item.taskName})`
  switch (item.outcome) {
    case 'cancelled': {
      const children = item.cancelledWith ?? []
      return children.length === 0 ? `Cancelled ${run}.` : `Cancelled ${run}, and with it ${children.join(', ')}.`
    }
    case 'replayed':
      return `Replayed ${run} as run ${item.replayedAs}.`
    case 'skipped':
      return `Skipped ${run}: ${item.error ?? 'it finished or was gone first'}`
    default:
      return `Could not ${action} ${run}: ${item.code === undefined ? '' : `${item.code}: `}${item.error ?? 'no reason given'}`
  }
}

function totalLine(action: BulkAction, found: number, totals: Record<string, number>): string {
  const past = PAST[action]
  if (found === 0) return `No runs match: nothing was ${past}.`
  const parts = [`${past[0].toUpperCase()}${past.slice(1)} ${plural(totals[past], 'run')}`]
  if (totals.skipped > 0) parts.push(`${totals.skipped} skipped`)
  if (totals.failed > 0) parts.push(`${totals.failed} failed`)
  return `${parts.join(', ')} (of ${plural(found, 'run')} found).`
}
