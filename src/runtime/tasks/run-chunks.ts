/**
 * `ctx.stream(name, data)`: the data chunks a run sends to its subscribers
 * (docs/realtime.md "Sending data as the run goes"). They are kept in the
 * run's record (`RunRecord.chunks`), so every store keeps them as it keeps
 * the record, and a subscriber that comes late catches up; the log is
 * bounded (`MAX_RUN_CHUNKS`, `MAX_RUN_CHUNK_BYTES`), dropping the oldest.
 *
 * Each execution of a handler has one `RunChunkWriter`. It writes the whole
 * log with `updateRun` expecting the run `running`, the write that ends an
 * attempt, so a store that fences an attempt's writes fences these too; one
 * write at a time, in order, and the chunks sent while one is under way go
 * together in the next. The attempt's end waits for the last of them
 * (`handler-call.ts`), so its write never races theirs.
 *
 * A replay runs the handler from the top: the calls made outside a running
 * `ctx.step.run` are counted, and those the run has recorded (`calls`) are
 * skipped. A call made while a step's function runs is always sent: such
 * a function runs again only when its step was not recorded.
 * Edge-safe: no `node:` import.
 */
import type { Logger, RunChunk, RunChunkLog, RunRecord } from '../types.ts'
import { describe } from '../describe.ts'
import { errorMessage, LeaseLostError } from '../errors.ts'
import { isoNow } from './clock.ts'
import { checkJson, utf8Length } from './json.ts'
import { groupDigits } from './payload-limit.ts'
import type { RunStore } from './store.ts'

/** Most chunks a run keeps. */
export const MAX_RUN_CHUNKS = 100
/** Most bytes of UTF-8 JSON the data of a run's kept chunks takes together, and so the largest chunk. */
export const MAX_RUN_CHUNK_BYTES = 64 * 1024
/** Longest chunk name, in characters. */
export const MAX_CHUNK_NAME_LENGTH = 64

// Letters, digits, '.', '-' and '_', as 'progress' or 'llm.text': a name a
// page switches on, which reads the same in a log.
const CHUNK_NAME = /^[A-Za-z0-9._-]+$/

/** Why `value` is no chunk name, or `null` when it is one. */
export function chunkNameProblem(value: unknown): string | null {
  if (typeof value === 'string' && value.length > 0 && value.length <= MAX_CHUNK_NAME_LENGTH && CHUNK_NAME.test(value)) return null
  return `name must be 1 to ${MAX_CHUNK_NAME_LENGTH} letters, digits, '.', '-' or '_', such as 'progress' (got ${describe(value)})`
}

/**
 * `data` as a chunk keeps it, a JSON copy, and its size in bytes of UTF-8
 * JSON. Throws a `TypeError` naming the call for a bad name or a value JSON
 * cannot hold, and a `RangeError` for data over `maxBytes`.
 */
export function chunkData(name: unknown, data: unknown, maxBytes: number): { data: unknown; bytes: number } {
  const call = `ctx.stream(${typeof name === 'string' ? JSON.stringify(name) : 'name'}, data)`
  const problem = chunkNameProblem(name)
  if (problem !== null) throw new TypeError(`${call}: ${problem}`)
  const fault = checkJson(data, maxBytes)
  if (fault?.problem !== undefined) throw new TypeError(`${call}: data cannot be sent as JSON: ${fault.problem}`)
  if (fault !== undefined) {
    throw new RangeError(
      `${call}: data is ${groupDigits(fault.bytes)} bytes of JSON, over the ${groupDigits(maxBytes)}-byte limit of a chunk; send it in smaller chunks`,
    )
  }
  const text = JSON.stringify(data)
  if (text === undefined)
    throw new TypeError(`${call}: data must be a JSON value, such as a number, a string or an object (got ${describe(data)})`)
  return { data: JSON.parse(text), bytes: utf8Length(text) }
}

/**
 * `log` with `chunk` (of `bytes`) added last and the oldest chunks dropped
 * to keep the bounds; `calls` when the chunk was a counted call. A new
 * log, frozen as the chunks in it: a store that keeps the object it was
 * given (the memory store) shares it with every reader, as it shares step
 * records (`step-log.ts`).
 */
export function withChunk(log: RunChunkLog | undefined, chunk: RunChunk, bytes: number, calls?: number): RunChunkLog {
  const kept = log === undefined ? [] : log.kept.slice()
  kept.push(Object.freeze(chunk))
  let total = (log?.bytes ?? 0) + bytes
  let dropped = 0
  // The newest stays whatever happens: no chunk is over MAX_RUN_CHUNK_BYTES.
  while (kept.length - dropped > 1 && (kept.length - dropped > MAX_RUN_CHUNKS || total > MAX_RUN_CHUNK_BYTES)) {
    total -= utf8Length(JSON.stringify(kept[dropped].data) ?? '')
    dropped++
  }
  return Object.freeze({
    kept: Object.freeze(dropped === 0 ? kept : kept.slice(dropped)) as RunChunk[],
    bytes: Math.max(total, bytes),
    calls: calls ?? log?.calls ?? 0,
  })
}

/** Listeners of the runs whose chunks were stored in this process, by run id. */
const listeners = new Map<string, Set<() => void>>()

/**
 * Calls `listener` each time chunks of run `runId` are stored in this
 * process (a run's stream reads the run again then, rather than at its next
 * refresh). Returns the way to stop.
 */
export function onChunksStored(runId: string, listener: () => void): () => void {
  let set = listeners.get(runId)
  if (set === undefined) listeners.set(runId, (set = new Set()))
  set.add(listener)
  return () => {
    set.delete(listener)
    if (set.size === 0 && listeners.get(runId) === set) listeners.delete(runId)
  }
}

function chunksStored(runId: string): void {
  const set = listeners.get(runId)
  if (set === undefined) return
  for (const listener of [...set]) listener()
}

/** What one execution's writer needs to know of its run. */
export interface ChunkWriterOptions {
  runId: string
  taskName: string
  /** The run's log when the execution began. */
  log: RunChunkLog | undefined
  store: RunStore
  logger: Logger
  /** The largest chunk, in bytes of UTF-8 JSON. */
  maxBytes: number
}

const RUNNING = { status: 'running' } as const

/** The callers waiting for one write. */
interface Callers {
  promise: Promise<void>
  resolve: () => void
  reject: (error: unknown) => void
}

/** The chunks of one execution of a handler, written to its run in order. */
export class RunChunkWriter {
  readonly #options: ChunkWriterOptions
  #log: RunChunkLog | undefined
  /** How many counted calls the run had recorded when the execution began. */
  readonly #recorded: number
  /** Counted calls made by this execution. */
  #calls = 0
  /** The callers of the chunks the next write carries. */
  #next: Callers | undefined
  /** The writes under way, until none is left. */
  #writing: Promise<void> | undefined

  constructor(options: ChunkWriterOptions) {
    this.#options = options
    this.#log = options.log
    this.#recorded = options.log?.calls ?? 0
  }

  /**
   * Sends one chunk; `counted` when no `ctx.step.run` function runs, so
   * that a replay skips it. Throws for a bad argument; resolves once the
   * chunk is stored, at once for one a replay skips.
   */
  send(name: string, data: unknown, counted: boolean): Promise<void> {
    const chunk = chunkData(name, data, this.#options.maxBytes)
    let calls: number | undefined
    if (counted) {
      calls = ++this.#calls
      if (calls <= this.#recorded) return Promise.resolve()
    }
    const seq = (this.#log?.kept.at(-1)?.seq ?? 0) + 1
    this.#log = withChunk(this.#log, { seq, name, data: chunk.data, at: isoNow() }, chunk.bytes, calls)
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

  /** Resolves once every chunk sent so far is written (or failed to be); `undefined` when none is under way. */
  writing(): Promise<void> | undefined {
    return this.#writing
  }

  async #drain(): Promise<void> {
    // The chunks a handler sends in one go, without waiting, go in one write.
    await Promise.resolve()
    for (let next = this.#next; next !== undefined; next = this.#next) {
      this.#next = undefined
      await this.#write(next)
    }
    this.#writing = undefined
  }

  async #write(callers: Callers): Promise<void> {
    const { runId, taskName, store, logger } = this.#options
    let run: RunRecord | undefined
    try {
      // A run no longer running (cancelled) takes nothing: its attempt is being stopped.
      run = await store.updateRun(runId, { chunks: this.#log }, RUNNING)
    } catch (error) {
      // A lost lease is logged once, by the dispatch that the step host tells of it (`step-host.ts`).
      if (!(error instanceof LeaseLostError)) {
        logger.error(`[svc] task "${taskName}": run ${runId}: ctx.stream could not store its chunks: ${errorMessage(error)}`)
      }
      callers.reject(error)
      return
    }
    callers.resolve()
    if (run !== undefined) chunksStored(runId)
  }
}
