/**
 * Cancellation that reaches children (`TaskRuntime.cancel`): a run
 * cancelled while it waits on a child run (`ctx.step.waitForTask`) takes
 * that child with it, and the child the child waits on, down the chain;
 * with `children: 'all'`, the runs its `ctx.step.enqueue` started too, and
 * theirs. The parent is cancelled first, so the child's end resumes
 * nothing. Edge-safe.
 */
import type { CancelledRun, CancelOptions, Logger, RunRecord } from '../../types.ts'
import { describe } from '../../describe.ts'
import { errorMessage, SvcError } from '../../errors.ts'

/** Which child runs a cancel reaches (`CancelOptions.children`). */
export type CancelReach = NonNullable<CancelOptions['children']>

const REACH: readonly CancelReach[] = ['waited', 'all', 'none']

/** `options.children`, checked. */
export function cancelChildren(options: CancelOptions | undefined): CancelReach {
  if (options === undefined) return 'waited'
  if (options === null || typeof options !== 'object') {
    throw new TypeError(`cancel(id, options): options must be an object such as { children: 'none' } (got ${describe(options)})`)
  }
  const { children = 'waited' } = options
  if (!isCancelReach(children)) {
    throw new TypeError(
      `cancel(id, { children }): children must be 'waited' (the child runs it waits on, and theirs), 'all' (those and the runs its ctx.step.enqueue started) or 'none' (got ${describe(children)})`,
    )
  }
  return children
}

export function isCancelReach(value: unknown): value is CancelReach {
  return (REACH as readonly unknown[]).includes(value)
}

/** `?children=` of a cancel over HTTP, checked: the reach, or why it is not one. */
export function cancelReachParam(value: string | null): CancelReach | string {
  const children = value ?? 'waited'
  return isCancelReach(children)
    ? children
    : `children must be waited (the child runs it waits on, and theirs), all (those and the runs it enqueued) or none (got ${JSON.stringify(children)})`
}

/**
 * The child runs a cancel of `parent` reaches, nearest first: the one it
 * waited on when `waited` was read, and with `'all'` each run its
 * `ctx.step.enqueue` calls started, in the order it recorded them.
 */
export function childrenReached(waited: RunRecord | undefined, parent: RunRecord, reach: CancelReach): { id: string; task?: string }[] {
  if (reach === 'none') return []
  const wait = waited?.suspended?.waitpoint
  const found: { id: string; task?: string }[] = wait?.type === 'task' ? [{ id: wait.runId, task: wait.task }] : []
  if (reach !== 'all') return found
  for (const step of Object.values(parent.steps)) {
    const runId = step.kind === 'enqueue' ? (step.output as { runId?: unknown } | undefined)?.runId : undefined
    if (typeof runId === 'string') found.push({ id: runId })
  }
  return found
}

/**
 * Cancels `children` of run `parentId` through `cancel` (which goes on
 * below each), one after the other, and resolves to the ids cancelled,
 * nearest first. A child that finished meanwhile or that cannot be reached
 * stays as it is; any other failure is logged, since the parent's cancel
 * has happened.
 */
export async function cancelChildRuns(
  parentId: string,
  children: readonly { id: string; task?: string }[],
  cancel: (childId: string) => Promise<CancelledRun | undefined>,
  logger: Logger,
): Promise<string[]> {
  const cancelled: string[] = []
  for (const { id, task } of children) {
    try {
      const child = await cancel(id)
      if (child) cancelled.push(child.id, ...child.cancelledWith)
    } catch (error) {
      // By code: from another shard, the error comes back over its call.
      const code = error instanceof SvcError ? error.code : undefined
      if (code !== 'RUN_FINISHED' && code !== 'RUN_NOT_FOUND') {
        logger.error(
          `[svc] cancelling run ${parentId}: its child run ${id}${task === undefined ? '' : ` (task "${task}")`} could not be cancelled: ${errorMessage(error)}`,
        )
      }
    }
  }
  return cancelled
}
