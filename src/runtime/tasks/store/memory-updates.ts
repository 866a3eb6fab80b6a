/**
 * The updates a `MemoryRunStore` (memory-store.ts) keeps (types/updates.ts):
 * each run's in the order they were sent, handed out as copies. A put and
 * an answer each happen in one turn, so nothing comes between the look-up
 * and the change. Edge-safe.
 */
import type { UpdateAnswer, UpdateRecord, UpdateStore } from '../../types/updates.ts'
import { jsonCopy } from '../base/json-copy.ts'
import { jsonLength } from '../base/json.ts'
import { answeredUpdate, pendingUpdate } from './update-records.ts'

export class MemoryUpdates implements UpdateStore {
  readonly #byRun = new Map<string, UpdateRecord[]>()
  /** A run's record grew by so many bytes of JSON (the store's bound counts them). */
  readonly #grew: (runId: string, bytes: number) => void

  constructor(grew: (runId: string, bytes: number) => void) {
    this.#grew = grew
  }

  async putUpdate(update: UpdateRecord, maxPending: number): Promise<{ update: UpdateRecord; kept: boolean } | 'full'> {
    const held = this.#byRun.get(update.runId) ?? []
    const same = held.find((kept) => kept.id === update.id)
    if (same) return { update: jsonCopy(same), kept: false }
    if (held.filter((kept) => kept.status === 'pending').length >= maxPending) return 'full'
    const kept = jsonCopy(pendingUpdate(update))
    held.push(kept)
    this.#byRun.set(update.runId, held)
    this.#grew(update.runId, jsonLength(kept))
    return { update: jsonCopy(kept), kept: true }
  }

  async answerUpdate(runId: string, id: string, answer: UpdateAnswer): Promise<UpdateRecord | undefined> {
    const held = this.#byRun.get(runId)
    const at = held?.findIndex((kept) => kept.id === id) ?? -1
    if (!held || at < 0) return undefined
    const update = held[at]
    if (update.status !== 'pending') return jsonCopy(update)
    const answered = jsonCopy(answeredUpdate(update, answer))
    held[at] = answered
    this.#grew(runId, jsonLength(answered) - jsonLength(update))
    return jsonCopy(answered)
  }

  async getUpdate(runId: string, id: string): Promise<UpdateRecord | undefined> {
    const update = this.#byRun.get(runId)?.find((kept) => kept.id === id)
    return update && jsonCopy(update)
  }

  async listUpdates(runId: string, options: { pending?: boolean } = {}): Promise<UpdateRecord[]> {
    const held = this.#byRun.get(runId) ?? []
    return (options.pending ? held.filter((update) => update.status === 'pending') : held).map((update) => jsonCopy(update))
  }

  /** A run's updates go with it. */
  dropRun(runId: string): void {
    this.#byRun.delete(runId)
  }
}
