/**
 * The calls of a SQLite-family run store that are the kit's procedures and
 * nothing more: events (events.ts), runtime schedules (schedules.ts),
 * signals (signals.ts) and updates (updates.ts).
 * A store hands over how it runs a procedure as a write and as a read (its
 * write lock or transaction, its read path) and takes these calls as they
 * are, so each is written once for every store of the dialect. Edge-safe.
 */
import type { RunStore } from '../../types/run-store.ts'
import { eventsSinceSql, listEventsSql, noteEventEffectsSql, putEventSql } from './events.ts'
import type { SqlProcedure } from './procedure.ts'
import { deleteScheduleSql, getScheduleSql, listSchedulesSql, putScheduleSql } from './schedules.ts'
import { listSignalsSql, putSignalSql, takeSignalSql } from './signals.ts'
import { answerUpdateSql, getUpdateSql, listUpdatesSql, putUpdateSql } from './updates.ts'

/** How a store runs a procedure: in its atomic block for writes, as it reads otherwise. */
export interface ProcedureRuns {
  /** `oneChange`: the procedure changes the database by one statement at most, and throws only before it or by it. */
  write<T>(procedure: SqlProcedure<T>, oneChange?: boolean): T | Promise<T>
  read<T>(procedure: SqlProcedure<T>): T | Promise<T>
}

/** The calls `kitCalls` makes. */
export type KitCalls = Required<
  Pick<
    RunStore,
    | 'putEvent'
    | 'eventsSince'
    | 'listEvents'
    | 'noteEventEffects'
    | 'putSchedule'
    | 'getSchedule'
    | 'listSchedules'
    | 'deleteSchedule'
    | 'putSignal'
    | 'takeSignal'
    | 'listSignals'
    | 'putUpdate'
    | 'answerUpdate'
    | 'getUpdate'
    | 'listUpdates'
  >
>

/** The calls, each running its procedure through `runs`; `where` names the store in errors. */
export function kitCalls(runs: ProcedureRuns, where: string): KitCalls {
  return {
    // One atomic block: the prune, the insert and the read of the held event commit together.
    putEvent: async (event) => runs.write(putEventSql(event, Date.now())),
    eventsSince: async (name, since, limit, match) => runs.read(eventsSinceSql(name, since, limit, match)),
    listEvents: async (query) => runs.read(listEventsSql(query, `${where}.listEvents`)),
    // One atomic block: the read of the event and its write, one statement of change.
    noteEventEffects: async (id, effects) => {
      await runs.write(noteEventEffectsSql(id, effects), true)
    },
    // One atomic block: the look-up of the key and the write.
    putSchedule: async (schedule) => runs.write(putScheduleSql(schedule)),
    getSchedule: async (id) => runs.read(getScheduleSql(id)),
    listSchedules: async (query) => runs.read(listSchedulesSql(query)),
    deleteSchedule: async (id) => runs.write(deleteScheduleSql(id)),
    // One atomic block: the look-up of the id, the count and the insert.
    putSignal: async (signal, maxWaiting) => runs.write(putSignalSql(signal, maxWaiting)),
    // One atomic block: the token's read, the signal's take and the token's settle.
    takeSignal: async (tokenId, name) => runs.write(takeSignalSql(tokenId, name)),
    listSignals: async (runId) => runs.read(listSignalsSql(runId)),
    // One atomic block: the look-up of the id, the count of the pending ones and the insert.
    putUpdate: async (update, maxPending) => runs.write(putUpdateSql(update, maxPending)),
    // One atomic block: the read of the update and its answer, one statement of change.
    answerUpdate: async (runId, id, answer) => runs.write(answerUpdateSql(runId, id, answer), true),
    getUpdate: async (runId, id) => runs.read(getUpdateSql(runId, id)),
    listUpdates: async (runId, options) => runs.read(listUpdatesSql(runId, options)),
  }
}
