/**
 * `ctx.metadata`: small JSON a run keeps up to date while it runs (a
 * stage, progress, an id in another system), kept in its record
 * (`RunRecord.metadata`) and searchable by its top-level keys
 * (`RunQuery.metadata`, `GET /__tasks/runs?metadata.<key>=…`).
 *
 * The whole object is at most `MAX_METADATA_BYTES` of JSON; a call that
 * would pass it, a key that is not 1 to `MAX_METADATA_KEY_LENGTH`
 * characters or a value JSON cannot hold throws at once, and nothing
 * changes. Each change is written with the execution's output writer
 * (run-output.ts), in order with `ctx.stream` and `ctx.log`, under the
 * attempt's fence. Metadata is state, not a call: a replay that sets a key
 * again sets the value it had. Edge-safe.
 */
import type { RunMetadata } from '../../types.ts'
import { describe } from '../../describe.ts'
import { checkJson } from '../base/json.ts'
import { groupDigits } from '../store/payload-limit.ts'

/** The most bytes of UTF-8 JSON a run's metadata takes. */
export const MAX_METADATA_BYTES = 4096
/** The longest metadata key, in characters. */
export const MAX_METADATA_KEY_LENGTH = 64

/** What `ctx.metadata` asks of its execution. */
export interface MetadataHost {
  /** Throws when the attempt is over, naming the call. */
  checkOpen(call: string): void
  /** Writes the whole metadata; resolves once stored. */
  write(metadata: Record<string, unknown>): Promise<void>
}

export class RunMetadataApi implements RunMetadata {
  #metadata: Record<string, unknown>
  readonly #host: MetadataHost

  constructor(metadata: Record<string, unknown> | undefined, host: MetadataHost) {
    this.#metadata = metadata ?? {}
    this.#host = host
  }

  get(key: string): unknown {
    return Object.hasOwn(this.#metadata, key) ? structuredClone(this.#metadata[key]) : undefined
  }

  current(): Record<string, unknown> {
    return structuredClone(this.#metadata)
  }

  set(key: string, value: unknown): Promise<void> {
    const call = `ctx.metadata.set(${describe(key)})`
    checkKey(key, call)
    if (value === undefined) return this.delete(key)
    this.#host.checkOpen(call)
    if (typeof value === 'function' || typeof value === 'symbol') {
      throw new TypeError(
        `${call}: the value must be a JSON value: a string, number, boolean, null, array or object (got ${describe(value)})`,
      )
    }
    const next = { ...this.#metadata, [key]: value }
    const fault = checkJson(next, MAX_METADATA_BYTES)
    if (fault?.problem !== undefined) throw new TypeError(`${call}: the value cannot be kept as JSON: ${fault.problem}`)
    if (fault !== undefined) {
      throw new RangeError(
        `${call}: the run's metadata would be ${groupDigits(fault.bytes)} bytes of JSON, over the ${groupDigits(MAX_METADATA_BYTES)}-byte limit; keep large data in a step's output or your own store`,
      )
    }
    return this.#write(JSON.parse(JSON.stringify(next)) as Record<string, unknown>)
  }

  delete(key: string): Promise<void> {
    const call = `ctx.metadata.delete(${describe(key)})`
    checkKey(key, call)
    this.#host.checkOpen(call)
    if (!Object.hasOwn(this.#metadata, key)) return Promise.resolve()
    const next = { ...this.#metadata }
    delete next[key]
    return this.#write(next)
  }

  #write(next: Record<string, unknown>): Promise<void> {
    this.#metadata = next
    return this.#host.write(next)
  }
}

function checkKey(key: unknown, call: string): void {
  if (typeof key !== 'string' || key.length === 0 || key.length > MAX_METADATA_KEY_LENGTH) {
    throw new TypeError(`${call}: a metadata key must be a string of 1 to ${MAX_METADATA_KEY_LENGTH} characters (got ${describe(key)})`)
  }
}
