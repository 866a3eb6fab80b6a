/**
 * The module-level task functions exported from `svcjs`.
 * Inside a process whose server set an active task runtime they act
 * in-process; elsewhere `enqueue` and `completeToken` call the task server
 * over HTTP. They never swallow an error.
 */
import type {
  BatchItem,
  CancelOptions,
  CancelRunResult,
  CompleteTokenResult,
  EnqueueOptions,
  EnqueueResult,
  RunRecord,
  TaskInput,
  TaskNameArg,
  TaskPayloadArgs,
} from '../../types.ts'
import { cancelChildren } from '../engine/cancel-children.ts'
import { getActiveTaskRuntime } from './active.ts'
import { MAX_BATCH_ITEMS } from '../flow/batch.ts'
import { cancelRunOverHttp, completeTokenOverHttp, enqueueManyOverHttp, enqueueOverHttp } from './client.ts'
import { checkEnqueueOptions } from '../definitions/options.ts'

/**
 * Starts a run of `taskName` and resolves to `{ runId, status }` without
 * waiting for it to finish. `status` is `running`, or `scheduled` with
 * `delaySeconds`. An `idempotencyKey` already seen resolves to the existing
 * run instead of starting another.
 *
 * In-process when a task runtime is active in this process; otherwise it
 * POSTs to `${SVC_TASK_URL ?? 'http://127.0.0.1:' + (PORT ?? 3000)}/__tasks/<name>`
 * with `Authorization: Bearer <SVC_TASK_SECRET>` when a
 * secret is set.
 *
 * Options are checked first: a `TypeError` or `RangeError` names the bad
 * one (`delaySeconds` from 0 to `MAX_DELAY_SECONDS`, a non-blank
 * `idempotencyKey` of at most `MAX_IDEMPOTENCY_KEY_LENGTH` characters that
 * does not start with a control character).
 * Rejects with `ValidationError`, `TaskNotFoundError` or `StoreFullError` in-process, and with
 * `HttpError` over HTTP: the answer's status and error text for a non-2xx
 * answer, status 0 (code `NETWORK_ERROR`, the failure in `cause`) when the
 * server cannot be reached.
 *
 * Typed by task name once `.svc/types.d.ts` registers the app's tasks: a
 * literal name must be a task's, and the payload must fit its `input`.
 */
export function enqueue<N extends string>(taskName: TaskNameArg<N>, ...args: TaskPayloadArgs<N, EnqueueOptions>): Promise<EnqueueResult>
export async function enqueue(taskName: string, payload?: unknown, opts?: EnqueueOptions): Promise<EnqueueResult> {
  if (typeof taskName !== 'string' || taskName === '') {
    throw new TypeError(`enqueue(taskName): taskName must be a non-empty dot-form task name (got ${typeof taskName})`)
  }
  const runtime = getActiveTaskRuntime()
  if (!runtime) return enqueueOverHttp(taskName, payload, opts)
  checkEnqueueOptions(opts, `enqueue("${taskName}")`)
  const run = await runtime.trigger(taskName, payload, { ...opts, trigger: 'enqueue' })
  return { runId: run.id, status: run.status }
}

/**
 * Starts one run of `taskName` per payload (at most 10,000), recorded in
 * one write to the run store, and resolves to one `BatchItem` per payload,
 * in order: `{ ok: true, id, status }` or `{ ok: false, error, code,
 * details? }` (a payload that failed validation, say); one bad payload
 * does not stop the others. `opts` applies to every run; with an
 * `idempotencyKey`, item `i` gets a key of svc's own made from the key and
 * `i` (`batchItemKey`), so the same batch sent again starts nothing more.
 *
 * In-process when a task runtime is active in this process; otherwise it
 * POSTs the payloads as a JSON array to `/__tasks/<name>/batch` on the
 * task server, as `enqueue` does.
 */
export function enqueueMany<N extends string>(
  taskName: TaskNameArg<N>,
  payloads: readonly TaskInput<N>[],
  opts?: EnqueueOptions,
): Promise<BatchItem[]>
export async function enqueueMany(taskName: string, payloads: readonly unknown[], opts?: EnqueueOptions): Promise<BatchItem[]> {
  if (typeof taskName !== 'string' || taskName === '') {
    throw new TypeError(`enqueueMany(taskName): taskName must be a non-empty dot-form task name (got ${typeof taskName})`)
  }
  if (!Array.isArray(payloads))
    throw new TypeError(`enqueueMany("${taskName}", payloads): payloads must be an array (got ${typeof payloads})`)
  if (payloads.length > MAX_BATCH_ITEMS) {
    throw new RangeError(
      `enqueueMany("${taskName}"): at most ${MAX_BATCH_ITEMS.toLocaleString('en')} runs go in one batch (got ${payloads.length}); send them in batches`,
    )
  }
  const runtime = getActiveTaskRuntime()
  if (!runtime) return enqueueManyOverHttp(taskName, payloads, opts)
  checkEnqueueOptions(opts, `enqueueMany("${taskName}")`)
  return runtime.triggerMany(taskName as string, payloads, { ...opts, trigger: 'enqueue' })
}

/**
 * Completes the token a `ctx.step.waitForToken` waits for, with `payload`,
 * and resumes the run. Resolves to `'completed'`, `'not_found'`,
 * `'already_completed'`, `'timed_out'` or `'run_cancelled'`. In-process when a task runtime is
 * active, otherwise `POST /__tasks/tokens/<tokenId>` on the task server.
 */
export async function completeToken(tokenId: string, payload?: unknown): Promise<CompleteTokenResult> {
  const runtime = getActiveTaskRuntime()
  if (!runtime) return completeTokenOverHttp(tokenId, payload)
  return runtime.completeToken(tokenId, payload)
}

/**
 * Cancels a scheduled, queued, running or suspended run: its attempt's `ctx.signal`
 * is aborted with a `RunCancelledError`, its timers are removed and its
 * tokens answer `run_cancelled`; its recorded steps stay readable. The
 * child runs it waits on are cancelled with it, down the chain, unless
 * `options.children` is `'none'`; with `'all'`, the runs it enqueued too.
 * Resolves to
 * `{ id, status: 'cancelled', cancelledWith }`. Rejects with `RunNotFoundError` or
 * `RunFinishedError` in-process; over HTTP (`POST /__tasks/runs/<id>/cancel`
 * on the task server, when no task runtime is active here) with an
 * `HttpError` whose code is `RUN_NOT_FOUND` (404) or `RUN_FINISHED` (409).
 */
export async function cancelRun(runId: string, options?: CancelOptions): Promise<CancelRunResult> {
  if (typeof runId !== 'string' || runId === '') {
    throw new TypeError(`cancelRun(runId): runId must be a non-empty run id string (got ${typeof runId})`)
  }
  const runtime = getActiveTaskRuntime()
  if (!runtime) return cancelRunOverHttp(runId, undefined, cancelChildren(options), options?.compensate === true)
  const { cancelledWith, status, compensation } = await runtime.cancel(runId, options)
  return compensation === undefined
    ? { id: runId, status: 'cancelled', cancelledWith }
    : { id: runId, status: status as 'running', cancelledWith, compensation }
}

/**
 * Fires every task whose `schedule` is `cron`, for platforms that deliver
 * the cron event themselves (edge scheduled events, function platforms).
 * Scheduled runs skip validation and get `{ _cron: true }`. Resolves to the
 * started runs; with `{ wait: true }`, to their final records once they end,
 * which is what a platform's `waitUntil` should hold on to.
 * Needs an active task runtime (`setActiveTaskRuntime`).
 */
export async function runScheduledTasks(cron: string, opts: { wait?: boolean } = {}): Promise<RunRecord[]> {
  const runtime = getActiveTaskRuntime()
  if (!runtime) {
    throw new Error(
      `runScheduledTasks("${cron}"): no task runtime is active in this process; call setActiveTaskRuntime(createTaskRuntime({ routes })) first`,
    )
  }
  const runs = await runtime.runScheduled(cron)
  return opts.wait ? Promise.all(runs.map((run) => runtime.waitForRun(run.id))) : runs
}
