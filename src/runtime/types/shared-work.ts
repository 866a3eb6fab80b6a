/**
 * How processes that share one run store split its work: claims of timers
 * and orphaned attempts, leases, the live processes and their versions,
 * and the wake-ups and run changes that cross between them. The store's
 * own interface, which offers it as `RunStore.shared`, is in run-store.ts.
 */
import type { RunChange, RunRecord } from './runs.ts'
import type { TimerRecord } from './timers.ts'

/** A live process and the `<task>@<version>` keys it serves (`SharedWork.liveVersions`). */
export interface LiveVersions {
  owner: string
  versions: string[]
}

/**
 * How processes that share one store split the work (docs/internals/postgres-store.md
 * "Claims and leases"). `owner` is one engine's random id. Every claim
 * is a compare-and-set: of several processes asking at once, one gets each
 * item. Claims and leases last `leaseMs`, so the work of a process that
 * dies goes back to the others once they lapse.
 *
 * A process that stalls (a pause of its event loop, a stopped container)
 * past `leaseMs` loses its leases without knowing it until it next renews.
 * A store whose leases are fenced (`RunStore.fences`, as `PostgresRunStore`)
 * closes that gap: every claim of a run moves its fencing token on, and
 * the writes of an attempt check the token its process's claim got, so
 * once another claim moved it on they change nothing and reject with
 * `LeaseLostError`. A cancel moves the token on too, so the attempt writes
 * nothing more.
 */
export interface SharedWork {
  /** How long a lease on a running attempt, or a claim on a timer, lasts. */
  readonly leaseMs: number
  /** How often an idle process looks for due work when nothing woke it. */
  readonly pollMs: number

  /**
   * Claims up to `limit` timers due at `now` (ISO) that no live claim holds,
   * earliest first. The claimer acts on each, then calls `finishTimer`.
   */
  claimDueTimers(owner: string, now: string, limit: number): Promise<TimerRecord[]>
  /** Claims one timer (an in-process timer fired), unless a live claim holds it or it is gone. */
  claimTimer(owner: string, id: string): Promise<TimerRecord | undefined>
  /** Removes a timer its owner acted on; one saved again since (unclaimed) stays. */
  finishTimer(owner: string, id: string): Promise<void>
  /** When the earliest unclaimed timer is due (ISO), if any. */
  nextDueAt(): Promise<string | undefined>

  /** Takes the lease on a `running` run, unless another owner holds a live one. */
  acquireLease(owner: string, runId: string): Promise<boolean>
  /**
   * Whether the store's `createRun` leases a run it inserts `running` to
   * the `leaseOwner` it is given: the engine that triggered the run runs it
   * without a round trip for `acquireLease`.
   */
  readonly leasesOnCreate?: boolean
  /** Extends the owner's leases on these runs; resolves to the ids it still holds (a cancelled run is not: its attempt is to stop). */
  renewLeases(owner: string, runIds: readonly string[]): Promise<string[]>
  /**
   * Gives up the owner's leases on these runs, so others may take the
   * attempts over at once. Without `runIds` (the process shuts down), all
   * of its leases but those on the runs in `keep`, and its claims on
   * timers it did not finish. A lease kept lapses, and the run it holds is
   * taken over then: an attempt whose end, retry or suspension could not
   * be recorded (outcome-writes.ts).
   */
  releaseLeases(owner: string, runIds?: readonly string[], keep?: readonly string[]): Promise<void>
  /**
   * Takes the lease on up to `limit` runs whose process died or shut down
   * mid-way: `running` runs that nobody holds (lapsed or released) and that
   * wait for no retry timer, and `suspended` runs whose lease lapsed (the
   * process died between suspending and arming the waitpoint; the claimer
   * arms it and releases the lease). Also `suspended` runs that nobody
   * holds and whose `task` waitpoint's child has finished: a child reached
   * through an idempotency key resumes only the run that started it, so
   * the claimer resumes the others. Never a run `owner` holds itself: its
   * dispatch there is still in flight, however late its renewal. Nor a
   * run whose task and version make one of the `skip` keys
   * (`<task>@<version>`): another live process serves that version.
   */
  claimOrphanedRuns(owner: string, limit: number, skip?: readonly string[]): Promise<RunRecord[]>

  /**
   * Optional, the three together: which process serves which versions
   * (docs/deploying.md "Runs across deploys"). `register` says `owner` is live and serves these
   * `<task>@<version>` keys; it is called again on every lease renewal, and
   * an owner not heard from for `leaseMs` is gone. `unregister` says it is
   * gone at once (it shuts down). `liveVersions` lists the live owners,
   * the one registered first last (newest first). A process that
   * registers the same keys as one registered before it (live, or gone
   * within the hour) takes that one's place in the order: a version is as
   * old as its first process.
   */
  register?(owner: string, versions: readonly string[]): Promise<void>
  unregister?(owner: string): Promise<void>
  liveVersions?(): Promise<LiveVersions[]>

  /** Claims one tick (ISO) of a task's schedule; true for exactly one caller per pair. */
  claimTick(taskName: string, tick: string): Promise<boolean>

  /** Tells every process listening (`subscribe`) that work may be waiting. */
  wake(): Promise<void>
  /** Calls `onWake` whenever some process calls `wake()`; resolves to the way to stop. */
  subscribe(onWake: () => void): Promise<() => Promise<void>>

  /**
   * Optional, with `onChanges`: tells the other processes of these run
   * changes, which `owner` made (`onRunChange` there reports them). Cheap
   * enough to call for every change: a store sends nothing while no other
   * owner listens, and sends the changes of a few milliseconds, or of one
   * commit, together. Resolves once they are sent (or dropped, unheard); a
   * change is not durable, and an owner that listens only from later on
   * never sees it.
   */
  publishChanges?(owner: string, changes: readonly RunChange[]): Promise<void>
  /**
   * Calls `listener` with the changes other owners publish once it has
   * resolved, in the order each owner published them, skipping those
   * `owner` published itself; resolves to the way to stop once every
   * publisher knows of it. `listener` must not throw.
   */
  onChanges?(owner: string, listener: (changes: RunChange[]) => void): Promise<() => Promise<void>>
}
