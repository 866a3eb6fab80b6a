import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it, vi } from 'vitest'
import { SqliteRunStore } from '../../src/node.ts'
import { DuplicateStepKeyError, StepMismatchError } from '../../src/runtime/errors.ts'
import { MemoryRunStore, enqueue, isSuspension, setActiveTaskRuntime, tokenIdFor, type RunPatch } from '../../src/runtime/tasks/index.ts'
import { LOCAL_WAIT_NOTE } from '../../src/runtime/tasks/steps/step-host.ts'
import type { RunRecord, RunStatus, TaskContext } from '../../src/types.ts'
import { finishedAfter, finished, runtime, sleep, task, until, untimed, untimedSteps } from './_helpers.ts'

describe('step.run and replay', () => {
  it("gives each step's function its key, attempt and an idempotency key that a retry keeps and no other step or run shares", async () => {
    const seen: { key: string; attempt: number; idempotencyKey: string }[] = []
    const rt = runtime([
      task(
        'charge',
        async (ctx) => {
          await ctx.step.run('charge', (step) => {
            seen.push(step)
            if (step.attempt === 1) throw new Error('the network dropped after the charge')
            return 'ch_1'
          })
          await ctx.step.run('email', (step) => {
            seen.push(step)
          })
        },
        { route: { retries: 1 } },
      ),
    ])
    const first = await finished(rt.waitForRun((await rt.trigger('charge')).id))
    const second = await finished(rt.waitForRun((await rt.trigger('charge')).id))
    expect([first.status, second.status]).toEqual(['completed', 'completed'])
    const ofRun = (id: string) => seen.filter((step) => step.idempotencyKey.includes(id))
    expect(ofRun(first.id)).toEqual([
      { key: 'charge', attempt: 1, idempotencyKey: `svc:${first.id}:charge` },
      { key: 'charge', attempt: 2, idempotencyKey: `svc:${first.id}:charge` },
      { key: 'email', attempt: 2, idempotencyKey: `svc:${first.id}:email` },
    ])
    expect(new Set(seen.map((step) => step.idempotencyKey)).size).toBe(4)
  })

  it('on replay the body re-runs from the first line but completed step functions do not', async () => {
    const body: number[] = []
    const fns: string[] = []
    const rt = runtime([
      task('pipeline', async (ctx) => {
        body.push(ctx.attempt)
        const a = await ctx.step.run('a', () => (fns.push('a'), 1))
        await ctx.step.sleep('pause', 0.03)
        const b = await ctx.step.run('b', () => (fns.push('b'), a + 1))
        return { a, b }
      }),
    ])
    const done = await rt.waitForRun((await rt.trigger('pipeline')).id)
    expect(done.result).toEqual({ a: 1, b: 2 })
    expect(body).toEqual([1, 1]) // two invocations, both attempt 1
    expect(fns).toEqual(['a', 'b'])
    expect(untimedSteps(done.steps)).toEqual({
      a: { status: 'completed', output: 1, kind: 'run' },
      pause: { status: 'completed', kind: 'sleep' },
      b: { status: 'completed', output: 2, kind: 'run' },
    })
  })

  for (const store of ['memory', 'sqlite'] as const) {
    it(`a handler that changes a step's output changes its own copy: the recorded output and every replay keep the value the step returned (${store})`, async () => {
      const seen: unknown[] = []
      const dir = mkdtempSync(join(tmpdir(), 'svc-step-copy-'))
      const rt = runtime(
        [
          task('collect', async (ctx) => {
            const list = await ctx.step.run('a', () => [1, 2])
            seen.push([...list])
            list.push(3)
            await ctx.step.sleep('first', 0.01)
            await ctx.step.sleep('second', 0.01)
            return list
          }),
        ],
        store === 'sqlite' ? { store: new SqliteRunStore({ path: join(dir, 'runs.db') }) } : {},
      )
      try {
        const done = await finished(rt.waitForRun((await rt.trigger('collect')).id))
        // The first invocation and both replays see what the step returned.
        expect(seen).toEqual([
          [1, 2],
          [1, 2],
          [1, 2],
        ])
        expect(done.result).toEqual([1, 2, 3])
        expect(untimed(done.steps.a)).toEqual({ status: 'completed', output: [1, 2], kind: 'run' })
      } finally {
        await rt.close()
        rmSync(dir, { recursive: true, force: true })
      }
    })
  }

  it('completed steps are kept across retries: a later failure does not redo them', async () => {
    vi.useFakeTimers()
    let charges = 0
    const rt = runtime([
      task(
        'charge',
        async (ctx) => {
          const receipt = await ctx.step.run('charge', () => `r${++charges}`)
          if (ctx.attempt < 2) throw new Error('mail server down')
          return receipt
        },
        { route: { retries: 1 } },
      ),
    ])
    const done = await finishedAfter(rt, (await rt.trigger('charge')).id, 100) // the backoff before attempt 2
    expect(done.status).toBe('completed')
    expect(done.result).toBe('r1')
    expect(charges).toBe(1)
  })

  it('a step whose function throws records nothing and fails the attempt', async () => {
    vi.useFakeTimers()
    let tries = 0
    const rt = runtime([
      task(
        'flaky-step',
        async (ctx) =>
          ctx.step.run('call', () => {
            if (++tries === 1) throw new Error('503')
            return 'ok'
          }),
        { route: { retries: 1 } },
      ),
    ])
    const done = await finishedAfter(rt, (await rt.trigger('flaky-step')).id, 100) // the backoff before attempt 2
    expect(done.attempts.map((a) => a.error)).toEqual(['503', undefined])
    expect(untimed(done.steps.call)).toEqual({ status: 'completed', output: 'ok', kind: 'run' })
  })

  it('reusing a key in one run throws DuplicateStepKeyError naming the key', async () => {
    const rt = runtime([
      task('dupe', async (ctx) => {
        await ctx.step.run('same', () => 1)
        await ctx.step.run('same', () => 2)
      }),
    ])
    let caught: unknown
    const rt2 = runtime([
      task('dupe2', async (ctx) => {
        await ctx.step.run('k', () => 1)
        try {
          await ctx.step.sleep('k', 1)
        } catch (error) {
          caught = error
          throw error
        }
      }),
    ])
    const done = await rt.waitForRun((await rt.trigger('dupe')).id)
    expect(done.status).toBe('failed')
    expect(done.attempts[0].error).toContain('"same"')
    await rt2.waitForRun((await rt2.trigger('dupe2')).id)
    expect(caught).toBeInstanceOf(DuplicateStepKeyError)
    expect((caught as DuplicateStepKeyError).stepKey).toBe('k')
  })

  it('the same key is fine again on replay (once per invocation)', async () => {
    const rt = runtime([
      task('replay-ok', async (ctx) => {
        const x = await ctx.step.run('x', () => 'value')
        await ctx.step.sleep('nap', 0.02)
        return x
      }),
    ])
    const done = await rt.waitForRun((await rt.trigger('replay-ok')).id)
    expect(done.status).toBe('completed')
    expect(done.result).toBe('value')
  })

  it('an empty or non-string key is a TypeError', async () => {
    const rt = runtime([task('nokey', async (ctx) => ctx.step.run('' as string, () => 1))])
    const done = await rt.waitForRun((await rt.trigger('nokey')).id)
    expect(done.attempts[0].error).toMatch(/key must be a non-empty string \(got ""\)/)
  })
})

describe('suspension', () => {
  it('a suspended run consumes no attempt and reports ok true, suspended and the completed steps', async () => {
    const rt = runtime([
      task('waiter', async (ctx) => {
        await ctx.step.run('first', () => 'one')
        await ctx.step.sleep('long', 3600)
        return 'never'
      }),
    ])
    const run = await rt.trigger('waiter')
    const suspended = await until(async () => {
      const r = await rt.getRun(run.id)
      return r?.status === 'suspended' ? r : undefined
    })
    expect(suspended.ok).toBe(true)
    expect(suspended.attempts).toEqual([])
    expect(untimedSteps(suspended.steps)).toEqual({ first: { status: 'completed', output: 'one', kind: 'run' } })
    expect(suspended.suspended?.stepKey).toBe('long')
    expect(suspended.suspended?.waitpoint.type).toBe('sleep')
    const until1 = Date.parse((suspended.suspended!.waitpoint as { until: string }).until)
    expect(until1 - Date.now()).toBeGreaterThan(3500_000)
  })

  it('ctx.attempt after a resume counts only failed attempts plus one', async () => {
    vi.useFakeTimers()
    const attempts: number[] = []
    const rt = runtime([
      task(
        'counted',
        async (ctx) => {
          attempts.push(ctx.attempt)
          await ctx.step.sleep('s1', 0.01)
          if (ctx.attempt === 1) throw new Error('first attempt fails after the sleep')
          await ctx.step.sleep('s2', 0.01)
          return ctx.attempt
        },
        { route: { retries: 1 } },
      ),
    ])
    const done = await finishedAfter(rt, (await rt.trigger('counted')).id, 10 + 100 + 10) // s1, the backoff, s2
    // attempt 1: suspend at s1; replay: fail; attempt 2: suspend at s2; replay: done
    expect(attempts).toEqual([1, 1, 2, 2])
    expect(done.result).toBe(2)
    expect(done.attempts.map((a) => a.index)).toEqual([1, 2])
  })

  it('a handler that swallows the suspension is still suspended, and later steps do not run', async () => {
    let after = 0
    const rt = runtime([
      task('swallow', async (ctx) => {
        try {
          await ctx.step.sleep('nap', 0.03)
        } catch (error) {
          expect(isSuspension(error)).toBe(true)
          expect(error).not.toBeInstanceOf(Error)
        }
        if (ctx.step) {
          await ctx.step.run('side-effect', () => after++).catch(() => undefined)
        }
        return 'returned'
      }),
    ])
    const run = await rt.trigger('swallow')
    await until(async () => (await rt.getRun(run.id))?.status === 'suspended')
    expect(after).toBe(0)
    expect(rt.logger.text('warn')).toContain('caught the suspension of step "nap"')
    const done = await rt.waitForRun(run.id)
    expect(done.result).toBe('returned')
    expect(after).toBe(1)
  })

  it('a handler that turns the suspension into another error is still suspended, not failed', async () => {
    const rt = runtime([
      task('wrapper', async (ctx) => {
        try {
          await ctx.step.sleep('nap', 0.02)
        } catch (error) {
          throw new Error(`wrapped: ${String(error)}`)
        }
        return 'woke'
      }),
    ])
    const run = await rt.trigger('wrapper')
    const done = await rt.waitForRun(run.id)
    expect(done.status).toBe('completed')
    expect(done.attempts).toHaveLength(1)
    expect(done.result).toBe('woke')
    expect(rt.logger.text('warn')).toContain('caught the suspension of step "nap"')
  })

  it('the one-time note about in-process waits is logged once, on the first durable wait', async () => {
    const rt = runtime([
      task('no-wait', async (ctx) => ctx.step.run('x', () => 1)),
      task('naps', async (ctx) => {
        await ctx.step.sleep('a', 0.01)
        await ctx.step.sleep('b', 0.01)
      }),
    ])
    await rt.waitForRun((await rt.trigger('no-wait')).id)
    expect(rt.logger.text()).not.toContain('in-process')
    await rt.waitForRun((await rt.trigger('naps')).id)
    await rt.waitForRun((await rt.trigger('naps')).id)
    expect(rt.logger.lines.filter((l) => l.text === LOCAL_WAIT_NOTE)).toHaveLength(1)
    expect(LOCAL_WAIT_NOTE).toContain('do not survive a restart')
  })

  it('the note points to the durable store that keeps waits across a restart', () => {
    expect(LOCAL_WAIT_NOTE).toBe(
      '[svc] ctx.step waits run in-process here: sleeps, child-task waits and tokens are kept in memory and timers, and do not survive a restart. ' +
        "For durable waits, pass a durable run store, such as SqliteRunStore from 'svcjs/node'.",
    )
  })

  it('a durable store logs no note about in-process waits', async () => {
    class DurableStore extends MemoryRunStore {
      readonly durable = true
    }
    const rt = runtime([task('naps', async (ctx) => ctx.step.sleep('a', 0.01))], { store: new DurableStore() })
    await rt.waitForRun((await rt.trigger('naps')).id)
    expect(rt.logger.text()).not.toContain('in-process')
  })
})

describe('sleep and sleepUntil', () => {
  it('sleepUntil accepts a Date and an ISO string and resumes after the instant', async () => {
    const started = Date.now()
    const rt = runtime([
      task('until', async (ctx) => {
        await ctx.step.sleepUntil('d', new Date(started + 30))
        await ctx.step.sleepUntil('s', new Date(started + 60).toISOString())
        return Date.now() - started
      }),
    ])
    const done = await rt.waitForRun((await rt.trigger('until')).id)
    expect(done.result).toBeGreaterThanOrEqual(58)
  })

  it('sleepUntil with a past instant completes without suspending', async () => {
    const rt = runtime([task('past', async (ctx) => ctx.step.sleepUntil('p', '2000-01-01T00:00:00Z'))])
    const done = await rt.waitForRun((await rt.trigger('past')).id)
    expect(untimed(done.steps.p)).toEqual({ status: 'completed', kind: 'sleep' })
    expect(rt.logger.text()).not.toContain('in-process')
  })

  it('sleepUntil with an invalid date is a clear error', async () => {
    const rt = runtime([task('bad-date', async (ctx) => ctx.step.sleepUntil('when', 'next tuesday-ish'))])
    const done = await rt.waitForRun((await rt.trigger('bad-date')).id)
    expect(done.attempts[0].error).toBe(
      'ctx.step.sleepUntil("when", date): date must be a valid Date or an ISO 8601 string (got "next tuesday-ish")',
    )
  })

  it('sleep with a negative duration is a TypeError naming the argument', async () => {
    const rt = runtime([task('neg', async (ctx) => ctx.step.sleep('n', -1))])
    const done = await rt.waitForRun((await rt.trigger('neg')).id)
    expect(done.attempts[0].error).toContain('seconds must be a finite number, 0 or more (got -1)')
  })
})

describe('waitForTask and enqueue steps', () => {
  it('waitForTask suspends on the child and returns its result', async () => {
    const rt = runtime([
      task('child', async (ctx) => {
        await sleep(20)
        return ctx.input.n * 2
      }),
      task('parent', async (ctx) => ctx.step.waitForTask('double', 'child', { n: 21 })),
    ])
    const run = await rt.trigger('parent')
    const suspended = await until(async () => {
      const r = await rt.getRun(run.id)
      return r?.status === 'suspended' ? r : undefined
    })
    expect(suspended.suspended?.waitpoint).toMatchObject({ type: 'task', task: 'child' })
    const childId = (suspended.suspended!.waitpoint as { runId: string }).runId
    expect((await rt.getRun(childId))?.parentRunId).toBe(run.id)
    const done = await rt.waitForRun(run.id)
    expect(done.result).toEqual({ ok: true, result: 42 })
    expect(untimed(done.steps.double)).toEqual({ status: 'completed', output: { ok: true, result: 42 }, kind: 'waitForTask' })
  })

  it('a failed child is returned to the parent, never thrown', async () => {
    const rt = runtime([
      task('bad-child', () => {
        throw new Error('child broke')
      }),
      task('parent', async (ctx) => {
        const r = await ctx.step.waitForTask('c', 'bad-child')
        return r
      }),
    ])
    const done = await rt.waitForRun((await rt.trigger('parent')).id)
    expect(done.status).toBe('completed')
    expect(done.result).toEqual({ ok: false, error: 'child broke' })
  })

  it('a replay after a retry does not start a second child', async () => {
    vi.useFakeTimers()
    let children = 0
    const rt = runtime([
      task('kid', () => ++children),
      task(
        'parent',
        async (ctx) => {
          const r = await ctx.step.waitForTask('kid', 'kid')
          if (ctx.attempt === 1) throw new Error('after the child')
          return r
        },
        { route: { retries: 1 } },
      ),
    ])
    const done = await finishedAfter(rt, (await rt.trigger('parent')).id, 100) // the backoff before attempt 2
    expect(done.result).toEqual({ ok: true, result: 1 })
    expect(children).toBe(1)
  })

  it('step.enqueue starts a child once and returns its runId without waiting', async () => {
    vi.useFakeTimers()
    let release!: () => void
    const gate = new Promise<void>((r) => (release = r))
    const rt = runtime([
      task('bg', () => gate),
      task(
        'fire',
        async (ctx) => {
          const { runId } = await ctx.step.enqueue('bg', 'bg')
          if (ctx.attempt === 1) throw new Error('retry me')
          return runId
        },
        { route: { retries: 1 } },
      ),
    ])
    const done = await finishedAfter(rt, (await rt.trigger('fire')).id, 100) // the backoff before attempt 2
    const child = await rt.getRun(done.result as string)
    expect(child?.status).toBe('running')
    expect((await rt.listRuns({ taskName: 'bg' })).length).toBe(1)
    release()
  })

  it('step.enqueue and waitForTask options follow the enqueue rule, and a refusal names the step', async () => {
    const rt = runtime([
      task('bg', () => 1),
      task('late', (ctx) => ctx.step.enqueue('bg', 'bg', undefined, { delaySeconds: 1e300 })),
      task('blank', (ctx) => ctx.step.waitForTask('kid', 'bg', undefined, { idempotencyKey: '  ' })),
      task('long', (ctx) => ctx.step.waitForTask('kid', 'bg', undefined, { idempotencyKey: 'k'.repeat(256) })),
    ])
    const late = await rt.waitForRun((await rt.trigger('late')).id)
    expect(late.attempts[0].error).toBe('ctx.step.enqueue("bg"): delaySeconds must be at most 31536000 seconds (365 days) (got 1e+300)')
    const blank = await rt.waitForRun((await rt.trigger('blank')).id)
    expect(blank.attempts[0].error).toMatch(
      /^ctx\.step\.waitForTask\("kid"\): idempotencyKey must contain a character other than whitespace/,
    )
    const long = await rt.waitForRun((await rt.trigger('long')).id)
    expect(long.attempts[0].error).toMatch(/^ctx\.step\.waitForTask\("kid"\): idempotencyKey must be at most 255 characters/)
    expect(await rt.listRuns({ taskName: 'bg' })).toEqual([])
  })

  it('a child keyed by a long step key is not held to the length limit of caller keys', async () => {
    const key = 's'.repeat(300)
    const rt = runtime([task('kid', () => 2), task('parent', (ctx) => ctx.step.waitForTask(key, 'kid'))])
    const done = await rt.waitForRun((await rt.trigger('parent')).id)
    expect(done.result).toEqual({ ok: true, result: 2 })
  })

  // step.waitForTask passes the caller's idempotencyKey to the child, so two
  // runs (or a run and a plain enqueue) can end up waiting for the same child.
  // That child was started for someone else: its parentRunId does not name
  // every run that waits for it.
  describe('a child shared through an idempotency key', () => {
    it('two parents that wait for one child both resume when it completes', async () => {
      let childRuns = 0
      let release!: () => void
      const gate = new Promise<void>((resolve) => (release = resolve))
      const rt = runtime([
        task('setup', async () => {
          childRuns++
          await gate
          return 'ready'
        }),
        task('worker', async (ctx) => ctx.step.waitForTask('setup', 'setup', undefined, { idempotencyKey: 'setup-once' })),
      ])
      const first = await rt.trigger('worker')
      const second = await rt.trigger('worker')
      await until(async () => {
        const runs = await Promise.all([rt.getRun(first.id), rt.getRun(second.id)])
        return runs.every((run) => run?.status === 'suspended')
      })
      release()
      const done = await Promise.all([finished(rt.waitForRun(first.id)), finished(rt.waitForRun(second.id))])
      expect(done.map((run) => run.result)).toEqual([
        { ok: true, result: 'ready' },
        { ok: true, result: 'ready' },
      ])
      expect(childRuns).toBe(1)
    })

    it('a parent that waits for a run enqueued earlier with the same key resumes when it fails', async () => {
      let release!: () => void
      const gate = new Promise<void>((resolve) => (release = resolve))
      const rt = runtime([
        task('import', async () => {
          await gate
          throw new Error('bad file')
        }),
        task('report', async (ctx) => ctx.step.waitForTask('import', 'import', undefined, { idempotencyKey: 'import-2024' })),
      ])
      setActiveTaskRuntime(rt)
      const imported = await enqueue('import', undefined, { idempotencyKey: 'import-2024' })
      const report = await rt.trigger('report')
      const suspended = await until(async () => {
        const run = await rt.getRun(report.id)
        return run?.status === 'suspended' ? run : undefined
      })
      expect(suspended.suspended?.waitpoint).toEqual({ type: 'task', task: 'import', runId: imported.runId })
      release()
      const done = await finished(rt.waitForRun(report.id))
      expect(done.result).toEqual({ ok: false, error: 'bad file' })
    })
  })
})

describe('waitForToken', () => {
  it('completeToken resumes the run with the payload and reports completed', async () => {
    const rt = runtime([
      task('approve', async (ctx) => {
        const r = await ctx.step.waitForToken<{ approved: boolean }>('approval', { timeoutSeconds: 60 })
        return r
      }),
    ])
    const run = await rt.trigger('approve')
    const suspended = await until(async () => {
      const r = await rt.getRun(run.id)
      return r?.status === 'suspended' ? r : undefined
    })
    const waitpoint = suspended.suspended!.waitpoint as { type: string; tokenId: string; timeoutAt: string }
    expect(waitpoint.type).toBe('token')
    expect(waitpoint.tokenId).toBe(tokenIdFor(run.id, 'approval'))
    expect(Date.parse(waitpoint.timeoutAt)).toBeGreaterThan(Date.now() + 50_000)
    expect(await rt.completeToken(waitpoint.tokenId, { approved: true })).toBe('completed')
    const done = await rt.waitForRun(run.id)
    expect(done.result).toEqual({ payload: { approved: true } })
    expect(untimed(done.steps.approval)).toEqual({ status: 'completed', output: { approved: true }, kind: 'waitForToken' })
    expect(await rt.completeToken(waitpoint.tokenId, { approved: false })).toBe('already_completed')
    expect(await rt.completeToken('no-such-token')).toBe('not_found')
  })

  it('a token that times out resumes the run with { timedOut: true } and records timed_out', async () => {
    const rt = runtime([task('expire', async (ctx) => ctx.step.waitForToken('t', { timeoutSeconds: 0.03 }))])
    const run = await rt.trigger('expire')
    const done = await rt.waitForRun(run.id)
    expect(done.result).toEqual({ timedOut: true })
    expect(untimed(done.steps.t)).toEqual({ status: 'timed_out', kind: 'waitForToken' })
    expect(await rt.completeToken(tokenIdFor(run.id, 't'), 1)).toBe('timed_out')
  })

  it('a handler can hand out its token id before waiting', async () => {
    const sent: string[] = []
    const rt = runtime([
      task('link', async (ctx) => {
        await ctx.step.run('email', () => sent.push(tokenIdFor(ctx.runId, 'click')))
        return ctx.step.waitForToken('click')
      }),
    ])
    const run = await rt.trigger('link')
    await until(async () => (await rt.getRun(run.id))?.status === 'suspended')
    expect(sent).toEqual([tokenIdFor(run.id, 'click')])
    expect(await rt.completeToken(sent[0])).toBe('completed')
    expect((await rt.waitForRun(run.id)).result).toEqual({})
  })

  it('a non-positive timeoutSeconds is a TypeError naming the option', async () => {
    const rt = runtime([task('badtimeout', async (ctx) => ctx.step.waitForToken('t', { timeoutSeconds: 0 }))])
    const done = await rt.waitForRun((await rt.trigger('badtimeout')).id)
    expect(done.attempts[0].error).toContain('timeoutSeconds must be a positive finite number (got 0)')
  })

  // A token's timeout is fixed when the token is created. The handler replays
  // from its first line, so a waitForToken call that runs again (a parallel
  // wait that was not the one the run suspended on, or an attempt cut off by a
  // restart) must not push the deadline back.
  describe('timeouts across replays', () => {
    // Only the clock is fake: a deadline passes without the test waiting for
    // it, and every timer the runtime sets still fires as it would.

    /** A memory store that keeps every `suspended` the runtime records. */
    class RecordingStore extends MemoryRunStore {
      suspensions: NonNullable<RunRecord['suspended']>[] = []
      override async updateRun(id: string, patch: RunPatch, expect?: { status: RunStatus | readonly RunStatus[] }) {
        const updated = await super.updateRun(id, patch, expect)
        if (updated && patch.suspended) this.suspensions.push(patch.suspended)
        return updated
      }
    }

    it('a parallel wait keeps the deadline its token was created with', async () => {
      vi.useFakeTimers({ toFake: ['Date'] })
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
      await vi.advanceTimersByTimeAsync(300)
      expect(await rt.completeToken(tokenIdFor(run.id, 'approval'), 'yes')).toBe('completed')
      const done = await rt.waitForRun(run.id)
      expect(done.result).toEqual({ approval: { payload: 'yes' }, receipt: { timedOut: true } })
      const receiptWaits = store.suspensions.filter((s) => s.stepKey === 'receipt')
      expect(receiptWaits).toEqual([
        {
          stepKey: 'receipt',
          waitpoint: { type: 'token', tokenId: tokenIdFor(run.id, 'receipt'), timeoutAt: receipt!.timeoutAt },
          since: expect.any(String),
        },
      ])
    })

    it('a token completed after its deadline is timed out, even when no timer has fired for it', async () => {
      vi.useFakeTimers({ toFake: ['Date'] })
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
      await vi.advanceTimersByTimeAsync(250)
      expect(await rt.completeToken(tokenIdFor(run.id, 'receipt'), 'late receipt')).toBe('timed_out')
      expect((await rt.store.getToken(tokenIdFor(run.id, 'receipt')))?.status).toBe('timed_out')
      expect(await rt.completeToken(tokenIdFor(run.id, 'approval'), 'yes')).toBe('completed')
      const done = await rt.waitForRun(run.id)
      expect(done.result).toEqual({ approval: { payload: 'yes' }, receipt: { timedOut: true } })
      expect(untimed(done.steps.receipt)).toEqual({ status: 'timed_out', kind: 'waitForToken' })
    })
  })
})

// A run suspended under one version of a task's code and resumed under
// another: on the memory store the handler changes in place; on SQLite the
// process's runtime and store are closed and new ones open the same file,
// as a deploy would, and recover the run.
describe('replay divergence', () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-divergence-'))
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  type Handler = (ctx: TaskContext) => Promise<unknown>

  /** Starts a run of `first`, waits for it to suspend on token `gate`, then resumes it under `next`. */
  async function resumedUnder(store: 'memory' | 'sqlite', first: Handler, next: Handler): Promise<{ done: RunRecord; warnings: string }> {
    let handler = first
    const routes = [task('versioned', (ctx) => handler(ctx), { route: { retries: 2 } })]
    const path = join(dir, `${crypto.randomUUID()}.db`)
    const open = () => (store === 'sqlite' ? { store: new SqliteRunStore({ path }) } : {})
    const before = open()
    let rt = runtime(routes, before)
    const { id } = await rt.trigger('versioned')
    await until(async () => (await rt.getRun(id))?.status === 'suspended')
    handler = next
    let after: { store?: SqliteRunStore } | undefined
    if (store === 'sqlite') {
      await rt.close()
      await before.store?.close()
      after = open()
      rt = runtime(routes, after)
      await rt.recover()
    }
    try {
      expect(await rt.completeToken(tokenIdFor(id, 'gate'), 'go')).toBe('completed')
      const done = await finished(rt.waitForRun(id))
      return { done, warnings: rt.logger.text('warn') }
    } finally {
      await rt.close()
      await after?.store?.close()
    }
  }

  for (const store of ['memory', 'sqlite'] as const) {
    describe(store === 'memory' ? 'MemoryRunStore' : 'SqliteRunStore, across a restart', () => {
      it('a recorded key reached through another kind of step fails the attempt with StepMismatchError, without a retry', async () => {
        let caught: unknown
        const { done } = await resumedUnder(
          store,
          async (ctx) => {
            await ctx.step.run('charge', () => 'receipt')
            await ctx.step.waitForToken('gate')
          },
          async (ctx) => {
            try {
              await ctx.step.sleep('charge', 1)
            } catch (error) {
              caught = error
              throw error
            }
            await ctx.step.waitForToken('gate')
          },
        )
        expect(caught).toBeInstanceOf(StepMismatchError)
        expect(caught).toMatchObject({ stepKey: 'charge', recorded: 'run', called: 'sleep', code: 'STEP_MISMATCH' })
        expect(done.status).toBe('failed')
        // retries: 2, yet one attempt: the same code would meet the same record again.
        expect(done.attempts).toHaveLength(1)
        expect(done.attempts[0].error).toMatch(/Step "charge" was recorded as ctx\.step\.run but is now reached through ctx\.step\.sleep/)
        expect(untimed(done.steps.charge)).toEqual({ status: 'completed', output: 'receipt', kind: 'run' })
      })

      it('a waited step resumed by the runtime keeps its kind: a replay through run() is a mismatch', async () => {
        let ran = false
        const { done } = await resumedUnder(
          store,
          async (ctx) => {
            await ctx.step.waitForToken('gate')
          },
          async (ctx) => {
            await ctx.step.run('gate', () => (ran = true))
          },
        )
        expect(ran).toBe(false)
        expect(done.status).toBe('failed')
        expect(done.attempts[0].error).toContain('recorded as ctx.step.waitForToken but is now reached through ctx.step.run')
      })

      it('a handler that catches the mismatch and returns still fails, and its later steps do not run', async () => {
        let later = false
        const { done } = await resumedUnder(
          store,
          async (ctx) => {
            await ctx.step.run('a', () => 1)
            await ctx.step.waitForToken('gate')
          },
          async (ctx) => {
            await ctx.step.enqueue('a', 'versioned').catch(() => undefined)
            await ctx.step.run('b', () => (later = true)).catch(() => undefined)
            return 'swallowed'
          },
        )
        expect(done.status).toBe('failed')
        expect(done.attempts[0].error).toContain('recorded as ctx.step.run but is now reached through ctx.step.enqueue')
        expect(later).toBe(false)
      })

      it('sleep and sleepUntil are one kind: switching between them is not a mismatch', async () => {
        const { done } = await resumedUnder(
          store,
          async (ctx) => {
            await ctx.step.sleep('nap', 0)
            await ctx.step.waitForToken('gate')
          },
          async (ctx) => {
            await ctx.step.sleepUntil('nap', new Date(Date.now() + 3600_000))
            return (await ctx.step.waitForToken('gate')) as unknown
          },
        )
        expect(done.status).toBe('completed')
        expect(done.result).toEqual({ payload: 'go' })
      })

      it('a replay that finishes without reaching recorded steps completes and logs one warning naming them', async () => {
        const { done, warnings } = await resumedUnder(
          store,
          async (ctx) => {
            await ctx.step.run('a', () => 1)
            await ctx.step.run('b', () => 2)
            await ctx.step.run('c', () => 3)
            await ctx.step.waitForToken('gate')
          },
          async (ctx) => {
            const a = await ctx.step.run('a', () => 10)
            await ctx.step.waitForToken('gate')
            return a
          },
        )
        expect(done.status).toBe('completed')
        expect(done.result).toBe(1)
        const lines = warnings.split('\n').filter((line) => line.includes('without reaching'))
        expect(lines).toHaveLength(1)
        expect(lines[0]).toContain(`run ${done.id} finished without reaching its recorded steps "b", "c"`)
      })
    })
  }

  it('a replay that meets every recorded step logs no warning', async () => {
    const { done, warnings } = await resumedUnder(
      'memory',
      async (ctx) => {
        await ctx.step.run('a', () => 1)
        return ctx.step.waitForToken('gate')
      },
      async (ctx) => {
        await ctx.step.run('a', () => 1)
        return ctx.step.waitForToken('gate')
      },
    )
    expect(done.status).toBe('completed')
    expect(warnings).not.toContain('without reaching')
  })

  it('a step recorded without a kind (before kinds were kept) matches any call', async () => {
    let runs = 0
    const rt = runtime([
      task('legacy', async (ctx) => {
        if (++runs === 1) await ctx.step.run('old', () => 'x')
        else await ctx.step.sleep('old', 3600)
        await ctx.step.waitForToken('gate')
        return 'done'
      }),
    ])
    const { id } = await rt.trigger('legacy')
    await until(async () => (await rt.getRun(id))?.status === 'suspended')
    await rt.store.saveStep(id, 'old', { status: 'completed', output: 'x' })
    expect(await rt.completeToken(tokenIdFor(id, 'gate'))).toBe('completed')
    const done = await finished(rt.waitForRun(id))
    expect(done.status).toBe('completed')
    expect(done.result).toBe('done')
  })
})
