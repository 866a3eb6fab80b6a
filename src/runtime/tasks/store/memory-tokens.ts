/**
 * The tokens and signals a `MemoryRunStore` (memory-store.ts) keeps: the
 * tokens of `waitForToken`, `waitForEvent` and `waitForSignal` by id, and
 * the signals sent to each run in the order they were sent
 * (types/signals.ts), both handed out as copies. A signal's take settles
 * its wait's token in the same turn, so nothing comes between them.
 * Edge-safe.
 */
import type { RunStore, TokenRecord } from '../../types/run-store.ts'
import type { SignalRecord } from '../../types/signals.ts'
import { type Clock, isoNowOf } from '../base/clock.ts'
import { jsonCopy } from '../base/json-copy.ts'
import { jsonLength } from '../base/json.ts'
import { TOKEN_BASE } from './run-size.ts'
import { receivedSignal } from './signal-records.ts'
import { settleTokenRecord } from './store.ts'

/** The signal calls of a run store. */
type SignalStore = Required<Pick<RunStore, 'putSignal' | 'takeSignal' | 'listSignals'>>

export class MemoryTokens implements SignalStore {
  readonly #tokens = new Map<string, TokenRecord>()
  readonly #tokensByRun = new Map<string, string[]>()
  readonly #signalsByRun = new Map<string, SignalRecord[]>()
  /** What settled tokens are stamped from. */
  readonly #clock: Clock
  /** A run's record grew by so many bytes of JSON (the store's bound counts them). */
  readonly #grew: (runId: string, bytes: number) => void

  constructor(clock: Clock, grew: (runId: string, bytes: number) => void) {
    this.#clock = clock
    this.#grew = grew
  }

  async putToken(token: TokenRecord): Promise<TokenRecord> {
    const existing = this.#tokens.get(token.id)
    if (existing) return { ...existing }
    this.#tokens.set(token.id, { ...token })
    const ids = this.#tokensByRun.get(token.runId)
    if (ids) ids.push(token.id)
    else this.#tokensByRun.set(token.runId, [token.id])
    this.#grew(token.runId, TOKEN_BASE + jsonLength(token.payload))
    return { ...token }
  }

  async getToken(id: string): Promise<TokenRecord | undefined> {
    const token = this.#tokens.get(id)
    return token && { ...token }
  }

  async settleToken(
    id: string,
    status: 'completed' | 'timed_out',
    payload?: unknown,
  ): Promise<{ settled: boolean; token: TokenRecord } | undefined> {
    return this.#settle(id, status, payload)
  }

  #settle(id: string, status: 'completed' | 'timed_out', payload: unknown): { settled: boolean; token: TokenRecord } | undefined {
    const token = this.#tokens.get(id)
    if (!token) return undefined
    if (token.status !== 'waiting') return { settled: false, token: { ...token } }
    settleTokenRecord(token, status, payload, isoNowOf(this.#clock))
    this.#grew(token.runId, jsonLength(token.payload))
    return { settled: true, token: { ...token } }
  }

  async putSignal(signal: SignalRecord, maxWaiting: number): Promise<{ signal: SignalRecord; kept: boolean } | 'full'> {
    const held = this.#signalsByRun.get(signal.runId) ?? []
    const same = held.find((kept) => kept.id === signal.id)
    if (same) return { signal: jsonCopy(same), kept: false }
    if (held.filter((kept) => kept.takenBy === undefined).length >= maxWaiting) return 'full'
    held.push(jsonCopy(signal))
    this.#signalsByRun.set(signal.runId, held)
    this.#grew(signal.runId, jsonLength(signal))
    return { signal: jsonCopy(signal), kept: true }
  }

  async takeSignal(tokenId: string, name: string): Promise<TokenRecord | undefined> {
    const token = this.#tokens.get(tokenId)
    if (token?.status !== 'waiting') return token && { ...token }
    const signal = this.#signalsByRun.get(token.runId)?.find((kept) => kept.name === name && kept.takenBy === undefined)
    if (!signal) return { ...token }
    signal.takenBy = tokenId
    return this.#settle(tokenId, 'completed', receivedSignal(signal))?.token
  }

  async listSignals(runId: string): Promise<SignalRecord[]> {
    return (this.#signalsByRun.get(runId) ?? []).map((signal) => jsonCopy(signal))
  }

  /** A run's tokens and signals go with it. */
  dropRun(runId: string): void {
    for (const id of this.#tokensByRun.get(runId) ?? []) this.#tokens.delete(id)
    this.#tokensByRun.delete(runId)
    this.#signalsByRun.delete(runId)
  }
}
