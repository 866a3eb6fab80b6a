/**
 * The updates one invocation answers (`ctx.onUpdate`, docs/tasks.md
 * "Updates"). Each update is kept with its run as `pending` until an
 * answer is kept with it (`RunStore.answerUpdate`, once, whoever answers):
 * the handler's result, its error, or a refusal (its data failed the
 * handler's schema; no handler of its name was declared by the time the
 * invocation waited or ended).
 *
 * The invocation answers the updates its run holds when it declares a
 * handler, whenever one arrives in this process while it runs
 * (`LiveUpdates.poke`), and a last time before it suspends or completes,
 * so its caller hears before the run waits again or finishes. Updates are
 * answered one at a time, in the order they were sent.
 *
 * A handler is code of the run, like the handler of the task: on a
 * replay, the updates it answered before are given to it again, in order,
 * once it is declared, so what it keeps in memory is rebuilt; their kept
 * answers stand, and the `ctx.step` calls it makes replay as any other.
 * Edge-safe.
 */
import type { Logger, UpdateAnswer, UpdateHandler, UpdateRecord } from '../../types.ts'
import { describe } from '../../describe.ts'
import { errorMessage, ValidationError } from '../../errors.ts'
import { updateProblem } from '../../events/rules.ts'
import { validate } from '../../schema.ts'
import { isStandardSchema } from '../../schema.ts'
import { type Clock, isoNowOf } from '../base/clock.ts'
import { checkJson } from '../base/json.ts'
import { payloadError } from '../store/payload-limit.ts'
import type { RunStore } from '../store/store.ts'
import type { LiveUpdates, UpdateListener } from './live-updates.ts'
import type { Invocation } from './invocation.ts'

/** What the updates of an invocation reach. */
export interface UpdateHost {
  store: RunStore
  clock: Clock
  logger: Logger
  maxPayloadBytes: number
  /** The runs answering updates in this process; absent where none are told. */
  liveUpdates?: LiveUpdates
}

/** How the invocation ended, as far as its updates go: `final` answers what is left (or refuses it); `dropped` leaves it for the next. */
export type UpdatesEnd = 'final' | 'dropped'

export class RunUpdates implements UpdateListener {
  readonly #runId: string
  readonly #taskName: string
  readonly #host: UpdateHost
  readonly #handlers = new Map<string, UpdateHandler>()
  /** The updates answered before this invocation that its handlers were given again (replayed), by id. */
  readonly #replayed = new Set<string>()
  /** The last pass asked for, and the one not begun yet, if any. */
  #working: Promise<void> | undefined
  #queued: Promise<void> | undefined
  #closed = false
  /** What the first `close` resolves with: a second close is the same. */
  #closing: Promise<void> | undefined

  /** The invocation, which counts the handlers running and holds their replay (`Invocation.updateHandlers`, `updatesReplay`). */
  readonly #inv: Pick<Invocation, 'updateHandlers' | 'updatesReplay'>

  constructor(runId: string, taskName: string, host: UpdateHost, inv: Pick<Invocation, 'updateHandlers' | 'updatesReplay'>) {
    this.#runId = runId
    this.#taskName = taskName
    this.#host = host
    this.#inv = inv
  }

  /** Calls `handler` with `data`, counted as an update handler running. */
  async #call(handler: UpdateHandler['handler'], data: unknown): Promise<unknown> {
    this.#inv.updateHandlers++
    try {
      return await handler(data)
    } finally {
      this.#inv.updateHandlers--
    }
  }

  /**
   * `ctx.onUpdate(name, update)`. The steps the invocation calls next wait
   * (`Invocation.updatesReplay`) until the updates answered before are
   * given to the handler again, and the pending ones answered.
   */
  declare(name: string, update: UpdateHandler): void {
    const call = `ctx.onUpdate(${describe(name)})`
    const problem = updateProblem(name, undefined)
    if (problem) throw new TypeError(`${call}: ${problem}`)
    if (update === null || typeof update !== 'object' || typeof update.handler !== 'function') {
      throw new TypeError(`${call}: the second argument must be { input?, handler }, with handler a function (got ${describe(update)})`)
    }
    if (update.input !== undefined && !isStandardSchema(update.input)) {
      throw new TypeError(`${call}: input must be a Standard Schema (valibot, zod, arktype…), got ${describe(update.input)}`)
    }
    if (this.#handlers.has(name)) throw new TypeError(`${call}: a handler of update "${name}" was declared already in this run`)
    if (this.#closed) return
    const first = this.#handlers.size === 0
    this.#handlers.set(name, update)
    if (first) this.#host.liveUpdates?.join(this.#runId, this)
    const inv = this.#inv
    const replayed = this.#pass(false)
    inv.updatesReplay = replayed
    replayed.then(() => {
      if (inv.updatesReplay === replayed) inv.updatesReplay = undefined
    })
  }

  /** An update arrived (or a handler was declared): answer what can be answered now. */
  poke(): void {
    if (this.#closed) return
    this.#pass(false)
  }

  /**
   * The invocation ended: after the pass under way, a `final` end answers
   * every update left, refusing those with no handler; resolves once done.
   * Never rejects: a store that fails is logged, and the update stays
   * pending for the run's next invocation.
   */
  close(end: UpdatesEnd): Promise<void> {
    if (this.#closing !== undefined) return this.#closing
    this.#closed = true
    this.#host.liveUpdates?.leave(this.#runId, this)
    this.#closing = end === 'final' ? this.#pass(true) : (this.#working ?? Promise.resolve())
    return this.#closing
  }

  /**
   * A pass over the run's updates, after the one under way: one not begun
   * yet is shared (it will see every update and handler there is by then),
   * so a pass that follows a declaration or an arrival always begins after it.
   */
  #pass(final: boolean): Promise<void> {
    if (!final && this.#queued !== undefined) return this.#queued
    const pass: Promise<void> = (this.#working ?? Promise.resolve()).then(() => {
      if (this.#queued === pass) this.#queued = undefined
      return this.#answerAll(final)
    })
    this.#queued = pass
    this.#working = pass
    return pass
  }

  async #answerAll(final: boolean): Promise<void> {
    try {
      for (const update of await this.#host.store.listUpdates!(this.#runId)) {
        const handler = this.#handlers.get(update.name)
        if (update.status === 'pending') {
          if (handler) await this.#answer(update, await this.#run(update, handler))
          else if (final) await this.#answer(update, this.#notHandled(update))
        } else if (handler && update.status !== 'rejected' && !this.#replayed.has(update.id)) {
          this.#replayed.add(update.id)
          await this.#replay(update, handler)
        }
      }
    } catch (error) {
      this.#host.logger.warn(
        `[svc] task "${this.#taskName}": run ${this.#runId}: its updates could not be answered now (${errorMessage(error)}); they stay for its next invocation`,
      )
    }
  }

  async #answer(update: UpdateRecord, answer: UpdateAnswer): Promise<void> {
    // Answered now, it is not given again to this invocation's handler.
    this.#replayed.add(update.id)
    await this.#host.store.answerUpdate!(this.#runId, update.id, answer)
    this.#host.liveUpdates?.answered(this.#runId, update.id)
  }

  /** Gives an update answered before to its handler again; its kept answer stands, whatever the handler does now. */
  async #replay(update: UpdateRecord, { input, handler }: UpdateHandler): Promise<void> {
    try {
      await this.#call(handler, input === undefined ? update.data : await validate(input, update.data, 'data'))
    } catch {
      // It threw then too, or the code changed: the answer kept is the answer.
    }
  }

  /** Runs `handler` on the update's data, checked first: its answer. */
  async #run(update: UpdateRecord, { input, handler }: UpdateHandler): Promise<UpdateAnswer> {
    let data = update.data
    if (input !== undefined) {
      try {
        data = await validate(input, data, 'data')
      } catch (error) {
        if (!(error instanceof ValidationError)) throw error
        return this.#refused('VALIDATION_FAILED', error.message, error.details)
      }
    }
    let result: unknown
    try {
      result = await this.#call(handler, data)
    } catch (error) {
      return this.#refusal('failed', 'UPDATE_FAILED', errorMessage(error))
    }
    const { maxPayloadBytes } = this.#host
    const fault = checkJson(result, maxPayloadBytes)
    if (fault !== undefined) {
      const subject = `The handler of update "${update.name}" returned`
      const error = payloadError(fault, maxPayloadBytes, `${subject} a value that cannot be stored as JSON`, subject)
      return this.#refusal('failed', 'UPDATE_FAILED', error.message)
    }
    const answer: UpdateAnswer = { status: 'completed', answeredAt: isoNowOf(this.#host.clock) }
    if (result !== undefined) answer.result = result
    return answer
  }

  #notHandled(update: UpdateRecord): UpdateAnswer {
    const declared = [...this.#handlers.keys()]
    const list = declared.length === 0 ? 'it declares none' : `it declares ${declared.map((name) => `"${name}"`).join(', ')}`
    return this.#refused(
      'UPDATE_NOT_HANDLED',
      `Run "${this.#runId}" of task "${this.#taskName}" has no ctx.onUpdate("${update.name}") handler (${list}); declare it before the run's first wait`,
    )
  }

  #refused(code: string, message: string, details?: ValidationError['details']): UpdateAnswer {
    const answer = this.#refusal('rejected', code, message)
    if (details !== undefined) answer.error!.details = details
    return answer
  }

  #refusal(status: 'failed' | 'rejected', code: string, message: string): UpdateAnswer {
    return { status, error: { code, message }, answeredAt: isoNowOf(this.#host.clock) }
  }
}
