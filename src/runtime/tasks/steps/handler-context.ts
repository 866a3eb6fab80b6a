/**
 * The `ctx` a task handler gets (`TaskContext`), for one call of it
 * (handler-call.ts), which serves what it asks for. Edge-safe.
 */
import type { ReceivedSignal, RunLogger, RunMetadata, RunRecord, StepApi, TaskContext, UpdateHandler } from '../../types.ts'

/** What `ctx` asks of the call it belongs to. */
export interface ContextCall {
  step(): StepApi
  signal(): AbortSignal
  stream(name: string, data: unknown): Promise<void>
  logger(): RunLogger
  metadata(): RunMetadata
  patched(id: string, deprecated: boolean): Promise<boolean>
  onUpdate(name: string, update: UpdateHandler): void
  /** The runtime's clock, in epoch milliseconds. */
  now(): number
}

/**
 * The `ctx` a handler gets. `step` and `signal` are getters on the
 * prototype, built on first use: most invocations of a small task touch
 * neither, and dispatch throughput is dominated by allocation.
 */
export class HandlerContext implements TaskContext {
  readonly attempt: number
  readonly input: unknown
  readonly runId: string
  readonly taskName: string
  readonly version: string | undefined
  readonly #call: ContextCall
  /** How many signals of each name `signals()` has read in this call: the next one's key follows. */
  #signalsRead: Map<string, number> | undefined

  constructor(call: ContextCall, run: RunRecord, attempt: number) {
    this.attempt = attempt
    this.input = run.input
    this.runId = run.id
    this.taskName = run.taskName
    this.version = run.version
    this.#call = call
  }

  get step(): StepApi {
    return this.#call.step()
  }

  get signal(): AbortSignal {
    return this.#call.signal()
  }

  stream(name: string, data: unknown): Promise<void> {
    return this.#call.stream(name, data)
  }

  get log(): RunLogger {
    return this.#call.logger()
  }

  get metadata(): RunMetadata {
    return this.#call.metadata()
  }

  now(): Date {
    return new Date(this.#call.now())
  }

  patched(id: string): Promise<boolean> {
    return this.#call.patched(id, false)
  }

  async deprecatePatch(id: string): Promise<void> {
    await this.#call.patched(id, true)
  }

  onUpdate<Input = unknown, Result = unknown>(name: string, update: UpdateHandler<Input, Result>): void {
    this.#call.onUpdate(name, update as UpdateHandler)
  }

  signals<T = unknown>(name: string): AsyncIterable<ReceivedSignal<T>> {
    const read = (this.#signalsRead ??= new Map())
    const next = async (): Promise<IteratorResult<ReceivedSignal<T>>> => {
      const n = (read.get(name) ?? 0) + 1
      read.set(name, n)
      // No timeout: the wait can only end with a signal.
      const signal = (await this.step.waitForSignal<T>(`signals:${name}:${n}`, name)) as ReceivedSignal<T>
      return { value: signal, done: false }
    }
    return { [Symbol.asyncIterator]: () => ({ next }) }
  }
}
