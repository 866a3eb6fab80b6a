/**
 * Sending events: each event starts one run of every task whose `on`
 * names it (docs/events.md). Exactly once per (task, event id), whatever
 * the number of sends or processes: the run carries the idempotency key
 * `eventRunKey(id)`, which every store holds to one run per task, so sending an
 * id again answers with the runs it started the first time.
 *
 * An event whose data does not fit a task's `input` still leaves a trace
 * there: a failed run naming the event and the problem, under the same
 * key, while the other tasks on the event start as usual. Edge-safe.
 */
import type { TaskDefinition } from '../definitions/definitions.ts'
import { assertPayload } from '../store/payload-limit.ts'
import type { EventInput, SentEvent } from '../../types/events.ts'
import type { RunRecord } from '../../types/runs.ts'
import type { EventRecord } from '../store/store.ts'
import type { EventEffects } from '../../types/run-store.ts'
import { describe } from '../../describe.ts'
import { validateTaskInput } from '../../schema.ts'
import { errorMessage } from '../../errors.ts'
import { eventIdProblem, eventNameProblem } from '../../events/rules.ts'
import { svcRunKey } from '../base/ids.ts'
import { type Clock, isoNowOf } from '../base/clock.ts'
import { type EventSchemas, eventData } from '../../events/schemas.ts'

/**
 * The idempotency key of the run event `id` starts, per task: a key of
 * svc's own (`svcRunKey`), which no trigger's key can equal, so no trigger
 * takes the place of the event's run with an input of its own.
 */
export function eventRunKey(id: string): string {
  return svcRunKey('event', id)
}

/** Most events one `sendEvents` call (or one `POST /__events`) may carry. */
export const MAX_EVENTS_PER_SEND = 100

/** The event's trigger, as the engine records it on the runs it starts. */
export interface EventTrigger {
  idempotencyKey: string
  event: { id: string; name: string }
}

export interface EventStartsOptions {
  tasks: ReadonlyMap<string, TaskDefinition>
  /** What a sent event's time is read from. */
  clock: Clock
  /** Makes the id of an event sent without one. @default crypto.randomUUID */
  newId?: () => string
  /** The app's event schemas (`src/events.ts`), which check the data of the names they have. */
  schemas?: EventSchemas
  maxPayloadBytes: number
  /** Records and starts a run of `def` with an input already validated. */
  start(def: TaskDefinition, input: unknown, trigger: EventTrigger): Promise<RunRecord>
  /** Records a failed run of `def` that the event could not start, with `message`. */
  reject(def: TaskDefinition, data: unknown, trigger: EventTrigger, message: string): Promise<RunRecord>
  /** Records the event in the store, unless its id is held: resolves to the event held. */
  record(event: EventRecord): Promise<EventRecord>
  /** Resumes the runs waiting for the event (`ctx.step.waitForEvent`): resolves to their ids. */
  deliver(event: EventRecord): Promise<string[]>
  /**
   * Where the runs of an app spread over several runtimes (`RuntimeShard`):
   * whether this one starts the run of `def` the event starts. The others
   * record the event and meet their waits, and start nothing for `def`.
   */
  owns?(def: TaskDefinition, input: unknown, idempotencyKey: string): boolean
  /** Notes on the recorded event the runs it started and the waits it met (`RunStore.noteEventEffects`), for listings. */
  note?(id: string, effects: EventEffects): Promise<void>
}

/** A checked event, ready to start runs. */
interface CheckedEvent {
  id: string
  name: string
  data: unknown
}

export class EventStarts {
  readonly #options: EventStartsOptions
  /** The tasks on each event name, in the order they were registered. */
  readonly #listeners = new Map<string, TaskDefinition[]>()

  constructor(options: EventStartsOptions) {
    this.#options = options
    for (const def of options.tasks.values()) {
      for (const name of def.on) {
        const defs = this.#listeners.get(name)
        if (defs) defs.push(def)
        else this.#listeners.set(name, [def])
      }
    }
  }

  /** The names some task listens on. */
  get names(): string[] {
    return [...this.#listeners.keys()]
  }

  /**
   * Checks every event first (a bad one throws a `TypeError`, a
   * `RangeError` or, for data its schema refuses, a `ValidationError`
   * naming it, and none is sent), then starts the runs of each, event by
   * event.
   */
  async send(events: readonly EventInput[], call: string): Promise<SentEvent[]> {
    if (!Array.isArray(events)) throw new TypeError(`${call}: events must be an array of { name, data?, id? } (got ${describe(events)})`)
    if (events.length > MAX_EVENTS_PER_SEND) {
      throw new RangeError(`${call}: at most ${MAX_EVENTS_PER_SEND} events go in one send (got ${events.length}); send them in batches`)
    }
    const where = (i: number) => (events.length === 1 ? call : `${call}: event ${i}`)
    const checked = events.map((event, i) => this.#check(event, where(i)))
    // Then the data, as the app's schema for the name outputs it.
    for (const [i, event] of checked.entries()) {
      event.data = await eventData(this.#options.schemas, event.name, event.data, where(i))
      this.#checkSize(event, where(i))
    }
    const sent: SentEvent[] = []
    for (const event of checked) sent.push(await this.#start(event))
    return sent
  }

  #check(event: EventInput, where: string): CheckedEvent {
    if (event === null || typeof event !== 'object' || Array.isArray(event)) {
      throw new TypeError(`${where}: an event is an object { name, data?, id? } (got ${describe(event)})`)
    }
    const { name, data, id = this.#options.newId?.() ?? crypto.randomUUID() } = event
    const problem = eventNameProblem(name) ?? eventIdProblem(id)
    if (problem) throw new TypeError(`${where}: ${problem}`)
    return { id, name, data }
  }

  #checkSize({ name, data }: CheckedEvent, where: string): void {
    assertPayload(
      data,
      this.#options.maxPayloadBytes,
      `${where}: the data of event "${name}" cannot be stored as JSON`,
      `The data of event "${name}" is`,
    )
  }

  /**
   * Records the event, then starts its tasks' runs and resumes the waits it
   * meets. An id sent again is the event held: its name and data, not the
   * ones sent now. Each step is idempotent, so a send cut off (a crash
   * between recording and starting) is finished by sending the id again.
   */
  async #start(checked: CheckedEvent): Promise<SentEvent> {
    const sent: EventRecord = { id: checked.id, name: checked.name, time: isoNowOf(this.#options.clock) }
    if (checked.data !== undefined) sent.data = checked.data
    const event = await this.#options.record(sent)
    const trigger: EventTrigger = { idempotencyKey: eventRunKey(event.id), event: { id: event.id, name: event.name } }
    const defs = this.#listeners.get(event.name) ?? []
    const started = await Promise.all(defs.map((def) => this.#startOne(def, event, trigger)))
    const runs = started.filter((run) => run !== undefined)
    const resumed = await this.#options.deliver(event)
    // Last, so a listing shows what the send did once it is done. A send cut
    // off before it leaves the event listed without some of that: sending
    // the id again notes the runs it started, and the waits it met whose
    // runs have not resumed yet, but not the ones that resumed in between.
    if (runs.length > 0 || resumed.length > 0) await this.#options.note?.(event.id, { runs: runs.map((run) => run.id), resumed })
    return {
      id: event.id,
      name: event.name,
      runs: runs.map((run) => ({ taskName: run.taskName, id: run.id, status: run.status })),
      resumed,
    }
  }

  /** The run of `def` the event starts, or `undefined` when another runtime starts it (`owns`). */
  async #startOne(def: TaskDefinition, event: EventRecord, trigger: EventTrigger): Promise<RunRecord | undefined> {
    const { owns } = this.#options
    let input: unknown
    try {
      input = await validateTaskInput(def.input, event.data)
    } catch (error) {
      // No input to place it by: the run that records the failure is placed as one without.
      if (owns && !owns(def, undefined, trigger.idempotencyKey)) return undefined
      const message = `event "${event.name}" (id ${event.id}) does not fit the input of task "${def.name}": ${errorMessage(error)}`
      return this.#options.reject(def, event.data, trigger, message)
    }
    if (owns && !owns(def, input, trigger.idempotencyKey)) return undefined
    return this.#options.start(def, input, trigger)
  }
}
