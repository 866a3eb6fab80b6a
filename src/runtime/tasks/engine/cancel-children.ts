/**
 * Cancellation that reaches children (`TaskRuntime.cancel`): a run
 * cancelled while it waits on a child run (`ctx.step.waitForTask`) takes
 * that child with it, and the child the child waits on, down the chain. The
 * parent is cancelled first, so the child's end resumes nothing. Edge-safe.
 */
import type { CancelledRun, CancelOptions, Logger, RunRecord } from '../../types.ts'
import { describe } from '../../describe.ts'
import { errorMessage, SvcError } from '../../errors.ts'

/** `options.children`, checked. */
export function cancelChildren(options: CancelOptions | undefined): 'waited' | 'none' {
  if (options === undefined) return 'waited'
  if (options === null || typeof options !== 'object') {
    throw new TypeError(`cancel(id, options): options must be an object such as { children: 'none' } (got ${describe(options)})`)
  }
  const { children = 'waited' } = options
  if (children !== 'waited' && children !== 'none') {
    throw new TypeError(
      `cancel(id, { children }): children must be 'waited' (the child runs it waits on, and theirs) or 'none' (got ${describe(children)})`,
    )
  }
  return children
}

/**
 * Cancels the child run `parent` waited on when it was read, through
 * `cancel` (which goes on down the chain), and resolves to the ids
 * cancelled, nearest first. A child that finished meanwhile or that cannot
 * be reached stays as it is; any other failure is logged, since the parent's
 * cancel has happened.
 */
export async function cancelWaitedChild(
  parent: RunRecord | undefined,
  cancel: (childId: string) => Promise<CancelledRun | undefined>,
  logger: Logger,
): Promise<string[]> {
  const wait = parent?.suspended?.waitpoint
  if (wait?.type !== 'task') return []
  try {
    const child = await cancel(wait.runId)
    return child ? [child.id, ...child.cancelledWith] : []
  } catch (error) {
    // By code: from another shard, the error comes back over its call.
    const code = error instanceof SvcError ? error.code : undefined
    if (code !== 'RUN_FINISHED' && code !== 'RUN_NOT_FOUND') {
      logger.error(
        `[svc] cancelling run ${parent!.id}: its child run ${wait.runId} (task "${wait.task}") could not be cancelled: ${errorMessage(error)}`,
      )
    }
    return []
  }
}
