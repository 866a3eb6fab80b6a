/**
 * The runtime schedules a `MemoryRunStore` (memory-store.ts) keeps
 * (types/schedules.ts `ScheduleStore`), by id, unique per task and key, and
 * handed out as copies. Edge-safe.
 */
import type { ScheduleQuery, ScheduleRecord, ScheduleStore } from '../../types/schedules.ts'
import { jsonCopy } from '../base/json-copy.ts'

export class MemorySchedules implements ScheduleStore {
  /** By id, in the order they were made. */
  readonly #byId = new Map<string, ScheduleRecord>()
  /** The id of each keyed schedule, by task and key. */
  readonly #byKey = new Map<string, string>()

  async putSchedule(schedule: ScheduleRecord): Promise<ScheduleRecord> {
    const keyed = schedule.key === undefined ? undefined : `${schedule.task}\u0000${schedule.key}`
    const held = keyed === undefined ? undefined : this.#byKey.get(keyed)
    const previous = held === undefined ? undefined : this.#byId.get(held)
    // A key held by another schedule: that one changes, keeping its id and birth.
    const kept =
      previous && previous.id !== schedule.id
        ? { ...jsonCopy(schedule), id: previous.id, createdAt: previous.createdAt }
        : jsonCopy(schedule)
    this.#byId.set(kept.id, kept)
    if (keyed !== undefined) this.#byKey.set(keyed, kept.id)
    return jsonCopy(kept)
  }

  async getSchedule(id: string): Promise<ScheduleRecord | undefined> {
    const schedule = this.#byId.get(id)
    return schedule && jsonCopy(schedule)
  }

  async listSchedules(query: ScheduleQuery): Promise<ScheduleRecord[]> {
    const out: ScheduleRecord[] = []
    for (const schedule of this.#byId.values()) {
      if (query.task !== undefined && schedule.task !== query.task) continue
      if (query.key !== undefined && schedule.key !== query.key) continue
      out.push(jsonCopy(schedule))
    }
    return out
  }

  async deleteSchedule(id: string): Promise<boolean> {
    const schedule = this.#byId.get(id)
    if (!schedule) return false
    this.#byId.delete(id)
    if (schedule.key !== undefined) this.#byKey.delete(`${schedule.task}\u0000${schedule.key}`)
    return true
  }
}
