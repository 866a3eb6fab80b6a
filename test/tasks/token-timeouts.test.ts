import { describe, expect, it } from 'vitest'
import { MemoryRunStore, tokenIdFor, type RunPatch } from '../../src/runtime/tasks/index.ts'
import type { RunRecord, RunStatus } from '../../src/types.ts'
import { runtime, sleep, task, until } from './_helpers.ts'

/** A memory store that keeps every `suspended` the runtime records. */
class RecordingStore extends MemoryRunStore {
  suspensions: NonNullable<RunRecord['suspended']>[] = []
  override async updateRun(id: string, patch: RunPatch, expect?: { status: RunStatus | readonly RunStatus[] }) {
    const updated = await super.updateRun(id, patch, expect)
    if (updated && patch.suspended) this.suspensions.push(patch.suspended)
    return updated
  }
}

// A token's timeout is fixed when the token is created. The handler replays
// from its first line, so a waitForToken call that runs again (a parallel
// wait that was not the one the run suspended on, or an attempt cut off by a
// restart) must not push the deadline back.
describe('waitForToken timeouts across replays', () => {
  it('a parallel wait keeps the deadline its token was created with', async () => {
    const store = new RecordingStore()
    const rt = runtime(
      [
        task('both', async (ctx) => {
          const [approval, receipt] = await Promise.all([
            ctx.step.waitForToken('approval'),
            ctx.step.waitForToken('receipt', { timeoutSeconds: 0.2 }),
          ])
          return { approval, receipt }
        }),
      ],
      { store },
    )
    const run = await rt.trigger('both')
    await until(async () => (await rt.getRun(run.id))?.status === 'suspended')
    expect(store.suspensions.map((s) => s.stepKey)).toEqual(['approval'])
    const receipt = await rt.store.getToken(tokenIdFor(run.id, 'receipt'))
    // The receipt deadline passes while the run waits for the approval.
    await sleep(300)
    expect(await rt.completeToken(tokenIdFor(run.id, 'approval'), 'yes')).toBe('completed')
    const done = await rt.waitForRun(run.id)
    expect(done.result).toEqual({ approval: { payload: 'yes' }, receipt: { timedOut: true } })
    const receiptWaits = store.suspensions.filter((s) => s.stepKey === 'receipt')
    expect(receiptWaits).toEqual([
      { stepKey: 'receipt', waitpoint: { type: 'token', tokenId: tokenIdFor(run.id, 'receipt'), timeoutAt: receipt!.timeoutAt } },
    ])
  })

  it('a token completed after its deadline is timed out, even when no timer has fired for it', async () => {
    const rt = runtime([
      task('both', async (ctx) => {
        const [approval, receipt] = await Promise.all([
          ctx.step.waitForToken('approval'),
          ctx.step.waitForToken('receipt', { timeoutSeconds: 0.1 }),
        ])
        return { approval, receipt }
      }),
    ])
    const run = await rt.trigger('both')
    await until(async () => (await rt.getRun(run.id))?.suspended?.stepKey === 'approval')
    // The run waits on the approval, so no timer runs for the receipt's deadline.
    await sleep(250)
    expect(await rt.completeToken(tokenIdFor(run.id, 'receipt'), 'late receipt')).toBe('timed_out')
    expect((await rt.store.getToken(tokenIdFor(run.id, 'receipt')))?.status).toBe('timed_out')
    expect(await rt.completeToken(tokenIdFor(run.id, 'approval'), 'yes')).toBe('completed')
    const done = await rt.waitForRun(run.id)
    expect(done.result).toEqual({ approval: { payload: 'yes' }, receipt: { timedOut: true } })
    expect(done.steps.receipt).toEqual({ status: 'timed_out' })
  })
})
