/**
 * What a handler sends while it runs, kept in its run's record: the data
 * chunks of `ctx.stream` (run-chunks.ts), the entries of `ctx.log`
 * (run-logs.ts) and the metadata of `ctx.metadata` (run-metadata.ts).
 *
 * Each execution of a handler has one `RunOutputWriter`. It writes the
 * changed logs with `updateRun` expecting the run `running`, the write that
 * ends an attempt, so a store that fences an attempt's writes fences these
 * too; one write at a time, in order, and what is sent while one is under
 * way goes together in the next. The attempt's end waits for the last of
 * them (`handler-call.ts`), so its write never races theirs.
 *
 * A replay runs the handler from the top: the calls made outside a running
 * `ctx.step.run` are counted, each kind on its own, and those the run has
 * recorded (`calls`) are skipped (metadata is state, not a call: setting
 * it again sets the same). A call made while a step's function runs
 * is always kept: such a function runs again only when its step was not
 * recorded. Edge-safe: no `node:` import.
 */
import type { Logger, RunChunkLog, RunLogEntry, RunLogs, RunRecord } from '../../types.ts'
import { errorMessage, LeaseLostError } from '../../errors.ts'
import { type Clock, isoNowOf } from '../base/clock.ts'
import { chunkData, chunksStored, withChunk } from './run-chunks.ts'
import { type LogLine, withLogEntry } from './run-logs.ts'
import type { RunStore } from '../store/store.ts'

/** What one execution's writer needs to know of its run. */
export interface OutputWriterOptions {
  runId: string
  taskName: string
  /** The attempt the execution belongs to, which each log entry names. */
  attempt: number
  /** The run's kept chunks and log entries when the execution began. */
  chunks: RunChunkLog | undefined
  logs: RunLogs | undefined
  store: RunStore
  logger: Logger
  /** What the chunks and log entries are stamped from. */
  clock: Clock
  /** The largest chunk, in bytes of UTF-8 JSON. */
  maxChunkBytes: number
  /** Told of each log entry kept (not of one a replay skips): `svc dev` prints them, telemetry exports them. */
  onLog?: (entry: RunLogEntry) => void
}

const RUNNING = { status: 'running' } as const

/** The callers waiting for one write. */
interface Callers {
  promise: Promise<void>
  resolve: () => void
  reject: (error: unknown) => void
}

/** One kept log of an execution: where it stands, and what the run had recorded of it. */
class Kept<L extends { calls: number }> {
  log: L | undefined
  /** Counted calls the run had recorded when the execution began. */
  readonly recorded: number
  /** Counted calls this execution made. */
  calls = 0
  /** Changed since the last write began. */
  changed = false

  constructor(log: L | undefined) {
    this.log = log
    this.recorded = log?.calls ?? 0
  }

  /** The number of a counted call, or `false` when a replay skips it. */
  count(): number | false {
    const calls = ++this.calls
    return calls <= this.recorded ? false : calls
  }
}

/** The chunks and log entries of one execution of a handler, written to its run in order. */
export class RunOutputWriter {
  readonly #options: OutputWriterOptions
  readonly #chunks: Kept<RunChunkLog>
  readonly #logs: Kept<RunLogs>
  /** The callers of what the next write carries. */
  #next: Callers | undefined
  /** The run's metadata to write with the next write, when it changed. */
  #metadata: Record<string, unknown> | undefined
  /** The writes under way, until none is left. */
  #writing: Promise<void> | undefined

  constructor(options: OutputWriterOptions) {
    this.#options = options
    this.#chunks = new Kept(options.chunks)
    this.#logs = new Kept(options.logs)
  }

  /**
   * Sends one chunk; `counted` when no `ctx.step.run` function runs, so
   * that a replay skips it. Throws for a bad argument; resolves once the
   * chunk is stored, at once for one a replay skips.
   */
  stream(name: string, data: unknown, counted: boolean): Promise<void> {
    const chunk = chunkData(name, data, this.#options.maxChunkBytes)
    const kept = this.#chunks
    const calls = counted ? kept.count() : undefined
    if (calls === false) return Promise.resolve()
    const seq = (kept.log?.kept.at(-1)?.seq ?? 0) + 1
    kept.log = withChunk(kept.log, { seq, name, data: chunk.data, at: isoNowOf(this.#options.clock) }, chunk.bytes, calls)
    kept.changed = true
    return this.#schedule()
  }

  /**
   * Keeps one log entry; `counted` as for `stream`, `step` the key of the
   * one `ctx.step.run` whose function runs, if any. Resolves once it is
   * stored (never rejects: a failed write is logged).
   */
  log(line: LogLine, counted: boolean, step: string | undefined): Promise<void> {
    const kept = this.#logs
    const calls = counted ? kept.count() : undefined
    if (calls === false) return Promise.resolve()
    const last = kept.log?.kept.at(-1)
    const seq = (last?.seq ?? kept.log?.dropped ?? 0) + 1
    const entry: RunLogEntry = { seq, ...line, at: isoNowOf(this.#options.clock), attempt: this.#options.attempt }
    if (step !== undefined) entry.step = step
    kept.log = withLogEntry(kept.log, entry, calls)
    kept.changed = true
    this.#options.onLog?.(entry)
    return this.#schedule().catch(() => {})
  }

  /** Writes the run's metadata, whole, with the next write; resolves once stored. */
  metadata(metadata: Record<string, unknown>): Promise<void> {
    this.#metadata = metadata
    return this.#schedule()
  }

  /** Resolves once everything sent so far is written (or failed to be); `undefined` when nothing is under way. */
  writing(): Promise<void> | undefined {
    return this.#writing
  }

  #schedule(): Promise<void> {
    let next = this.#next
    if (next === undefined) {
      let resolve!: () => void
      let reject!: (error: unknown) => void
      const promise = new Promise<void>((yes, no) => {
        resolve = yes
        reject = no
      })
      // A chunk sent without waiting must not bring the process down when
      // its write fails: the failure is logged (`#write`) either way.
      promise.catch(() => {})
      next = this.#next = { promise, resolve, reject }
    }
    this.#writing ??= this.#drain()
    return next.promise
  }

  async #drain(): Promise<void> {
    // What a handler sends in one go, without waiting, goes in one write.
    await Promise.resolve()
    for (let next = this.#next; next !== undefined; next = this.#next) {
      this.#next = undefined
      await this.#write(next)
    }
    this.#writing = undefined
  }

  async #write(callers: Callers): Promise<void> {
    const { runId, taskName, store, logger } = this.#options
    const patch: { chunks?: RunChunkLog; logs?: RunLogs; metadata?: Record<string, unknown> } = {}
    const chunks = this.#chunks.changed
    if (chunks) patch.chunks = this.#chunks.log
    if (this.#logs.changed) patch.logs = this.#logs.log
    if (this.#metadata !== undefined) patch.metadata = this.#metadata
    this.#chunks.changed = this.#logs.changed = false
    this.#metadata = undefined
    let run: RunRecord | undefined
    try {
      // A run no longer running (cancelled) takes nothing: its attempt is being stopped.
      run = await store.updateRun(runId, patch, RUNNING)
    } catch (error) {
      // A lost lease is logged once, by the dispatch that the step host tells of it (`step-host.ts`).
      if (!(error instanceof LeaseLostError)) {
        const what = chunks
          ? 'ctx.stream could not store its chunks'
          : patch.logs !== undefined
            ? 'ctx.log could not store its entries'
            : 'ctx.metadata could not store the metadata'
        logger.error(`[svc] task "${taskName}": run ${runId}: ${what}: ${errorMessage(error)}`)
      }
      callers.reject(error)
      return
    }
    callers.resolve()
    if (run !== undefined && chunks) chunksStored(runId)
  }
}
