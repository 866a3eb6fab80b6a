/**
 * Runs that wait for a child run (`ctx.step.waitForTask`), for `Waitpoints`
 * (waitpoints.ts): a finished run resumes the run that started it and every
 * other run that waits for it; a child in another shard is looked at, and
 * tells its parent's shard when it finishes (shard-children.ts). Resuming
 * is `Waitpoints`'; this keeps who waits for whom. Edge-safe.
 */
import type { ChildRunResult, EnqueueOptions, Logger, RunRecord, StepRecord, TriggerOptions } from '../../types.ts'
import { errorMessage } from '../../errors.ts'
import { childIdempotencyKey, timerId } from '../base/ids.ts'
import type { Invocation } from './invocation.ts'
import { earlierDeadline } from './deadlines.ts'
import type { Clock } from '../base/clock.ts'
import type { ShardChildren } from './shard-children.ts'
import { isFinished, type RunStore, type TimerRecord } from '../store/store.ts'

/** What child waits need from `Waitpoints`. */
export interface ChildWaitsHost {
  store: RunStore
  logger: Logger
  children: ShardChildren | undefined
  /** What the next look at a child elsewhere is timed by. */
  clock: Clock
  /** Records the awaited step and hands the run back; false when it no longer waits there. */
  resume(runId: string, stepKey: string, step: StepRecord): Promise<boolean>
  /** Records a timer, then arms it in-process. */
  arm(timer: TimerRecord): Promise<void>
  /** Removes a timer, in-process and in the store. */
  dropTimer(id: string): Promise<void>
}

export class ChildWaits {
  readonly #host: ChildWaitsHost
  /** Runs waiting for a child they did not start, by child id (see `arm`). */
  readonly #watchers = new Map<string, Set<string>>()

  constructor(host: ChildWaitsHost) {
    this.#host = host
  }

  /** Arranges for `run`, suspended on a `task` waitpoint for `childId`, to resume once the child finishes. */
  async arm(run: RunRecord, stepKey: string, childId: string): Promise<void> {
    const { store, children } = this.#host
    const there = children?.holder(childId)
    if (there !== undefined) return this.#lookElsewhere(run, there)
    let child = await store.getRun(childId)
    if (child && !isFinished(child.status) && child.parentRunId !== run.id) {
      // The caller's idempotency key led to a run that another run (or a
      // plain enqueue) started: when it finishes it resumes its own parent
      // only, so this run asks to be told too, then looks again in case it
      // finished in between.
      this.#watch(child.id, run.id)
      child = await store.getRun(childId)
    }
    if (child && isFinished(child.status)) await this.#host.resume(run.id, stepKey, { status: 'completed', output: childResult(child) })
  }

  /** `run` finished: its parent, and every other run that waits for it, resume. Never rejects. */
  finished(run: RunRecord): void {
    const parentShard = run.parentRunId === undefined ? undefined : this.#host.children?.holder(run.parentRunId)
    if (parentShard !== undefined) this.#tellParent(parentShard, run)
    else if (run.parentRunId !== undefined) this.#resumeParent(run, run.parentRunId)
    const watchers = this.#watchers.get(run.id)
    if (watchers === undefined) return
    this.#watchers.delete(run.id)
    for (const parentId of watchers) if (parentId !== run.parentRunId) this.#resumeParent(run, parentId)
  }

  /** `child`, a run of another shard, finished: its parent here resumes if it waits for it (`ShardHere.childFinished`). */
  async childFinishedElsewhere(child: RunRecord): Promise<void> {
    const parentId = child.parentRunId
    if (parentId === undefined || !isFinished(child.status)) return
    const stepKey = await this.#resumeIfWaiting(child, parentId)
    if (stepKey !== undefined) await this.#dropNextLook(parentId, stepKey)
  }

  /** Resumes `parentId` too when `childId` finishes, for children that run did not start. */
  #watch(childId: string, parentId: string): void {
    const parents = this.#watchers.get(childId)
    if (parents) parents.add(parentId)
    else this.#watchers.set(childId, new Set([parentId]))
  }

  /** Tells the parent's shard that `child` finished; should the word be lost, the parent's own looks find it (`#lookElsewhere`). */
  #tellParent(shard: number, child: RunRecord): void {
    this.#host
      .children!.notifyParent(shard, child)
      .catch((error) =>
        this.#host.logger.warn(
          `[svc] task "${child.taskName}": could not tell shard ${shard} that run ${child.id} finished (${errorMessage(error)}); its parent run ${child.parentRunId} finds out when it next looks`,
        ),
      )
  }

  /**
   * A run suspended on a child in shard `shard` looks at it, and is
   * resumed if it has finished. The next look (a `child` timer) is
   * recorded first, so that a look that fails, or an object that goes
   * mid-way, only delays the resumption. The look itself is not waited
   * for: a recovery (which arms every waitpoint before its object takes
   * calls) must not wait for another object that may be recovering too,
   * and looking back at this one.
   */
  async #lookElsewhere(run: RunRecord, shard: number): Promise<void> {
    const { stepKey, waitpoint, since } = run.suspended!
    const children = this.#host.children!
    const dueAt = children.nextLook(since, this.#host.clock.now())
    await this.#host.arm({ id: timerId(run.id, 'child', stepKey), runId: run.id, kind: 'child', stepKey, dueAt })
    const childId = (waitpoint as { runId: string }).runId
    children
      .getRun(shard, childId)
      .then(async (child) => {
        if (!child || !isFinished(child.status)) return
        if (await this.#host.resume(run.id, stepKey, { status: 'completed', output: childResult(child) }))
          await this.#dropNextLook(run.id, stepKey)
      })
      .catch((error) =>
        this.#host.logger.warn(`[svc] run ${run.id}: could not look at its child run ${childId} in shard ${shard}: ${errorMessage(error)}`),
      )
  }

  /** Resumes `parentId` if it waits for this finished child. */
  #resumeParent(child: RunRecord, parentId: string): void {
    this.#resumeIfWaiting(child, parentId).catch((error) =>
      this.#host.logger.error(`[svc] task "${child.taskName}": could not resume parent run ${parentId}: ${errorMessage(error)}`),
    )
  }

  /** Resumes `parentId` if it waits for `child`, which has finished; answers the step it resumed. */
  async #resumeIfWaiting(child: RunRecord, parentId: string): Promise<string | undefined> {
    const parent = await this.#host.store.getRun(parentId)
    const wait = parent?.suspended
    if (!parent || !wait || wait.waitpoint.type !== 'task' || wait.waitpoint.runId !== child.id) return undefined
    return (await this.#host.resume(parent.id, wait.stepKey, { status: 'completed', output: childResult(child) }))
      ? wait.stepKey
      : undefined
  }

  /** Clears the next look of a run at its child in another shard, once the child resumed it (`#lookElsewhere`). */
  #dropNextLook(runId: string, stepKey: string): Promise<void> {
    return this.#host.dropTimer(timerId(runId, 'child', stepKey))
  }
}

/** What a parent waiting on a finished child resumes with; a cancelled child is a failure that says so. */
function childResult(child: RunRecord): ChildRunResult {
  if (child.status !== 'cancelled') return childRunResult(child)
  return { ok: false, cancelled: true, error: `Run ${child.id} of task "${child.taskName}" was cancelled` }
}

/** The result a parent sees for a finished child. */
export function childRunResult(child: RunRecord): ChildRunResult {
  if (child.status === 'completed') return child.result === undefined ? { ok: true } : { ok: true, result: child.result }
  // A run that compensated failed with the error it was undoing.
  const error = child.compensation?.error ?? child.attempts[child.attempts.length - 1]?.error
  return { ok: false, error: error ?? `Run ${child.id} of task "${child.taskName}" failed` }
}

/** The options of a child run that `step.enqueue` (`'enqueue'`) or `step.waitForTask` (`'child'`) starts at step `key` of `inv`'s run. */
export function childOptions(inv: Invocation, key: string, opts: EnqueueOptions | undefined, trigger: 'enqueue' | 'child'): TriggerOptions {
  // A child the run waits on ends by the run's deadline, or by its own if that is earlier (the trigger takes the earlier).
  const inherited = trigger === 'child' && inv.deadline !== undefined ? earlierDeadline(opts?.deadline, inv.deadline) : opts?.deadline
  return {
    ...opts,
    ...(inherited === undefined ? {} : { deadline: inherited }),
    idempotencyKey: opts?.idempotencyKey ?? childIdempotencyKey(inv.runId, key),
    trigger,
    parentRunId: inv.runId,
    trace: inv.span?.trace(),
  }
}
