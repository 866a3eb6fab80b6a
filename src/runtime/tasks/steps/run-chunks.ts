/**
 * `ctx.stream(name, data)`: the data chunks a run sends to its subscribers
 * (docs/realtime.md "Sending data as the run goes"). They are kept in the
 * run's record (`RunRecord.chunks`), so every store keeps them as it keeps
 * the record, and a subscriber that comes late catches up; the log is
 * bounded (`MAX_RUN_CHUNKS`, `MAX_RUN_CHUNK_BYTES`), dropping the oldest.
 *
 * They are written with the run's log entries by the execution's
 * `RunOutputWriter` (`run-output.ts`), which also skips on a replay the
 * calls the run has recorded.
 * Edge-safe: no `node:` import.
 */
import type { RunChunk, RunChunkLog } from '../../types.ts'
import { describe } from '../../describe.ts'
import { checkJson, utf8Length } from '../base/json.ts'
import { groupDigits } from '../store/payload-limit.ts'
import { appendBounded } from '../base/bounded-log.ts'

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
  const next = appendBounded(log?.kept, log?.bytes ?? 0, chunk, bytes, CHUNK_BOUNDS, chunkBytes)
  return Object.freeze({ kept: next.kept, bytes: next.bytes, calls: calls ?? log?.calls ?? 0 })
}

const CHUNK_BOUNDS = { count: MAX_RUN_CHUNKS, bytes: MAX_RUN_CHUNK_BYTES }

function chunkBytes(chunk: RunChunk): number {
  return utf8Length(JSON.stringify(chunk.data) ?? '')
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

/** Tells the listeners of run `runId` that its chunks were stored. */
export function chunksStored(runId: string): void {
  const set = listeners.get(runId)
  if (set === undefined) return
  for (const listener of [...set]) listener()
}
