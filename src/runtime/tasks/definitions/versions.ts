/**
 * Runs pinned to the version of the code they started on (docs/deploying.md "Runs across deploys").
 *
 * Each run records its task's version (`RunRecord.version`). Before an
 * attempt runs here, the dispatch asks `RunVersions.check` whether the
 * run's version is this process's for its task:
 *
 * - it is (or the run or the task has none): the attempt runs here;
 * - on a store several processes share, a live process of the run's
 *   version is registered (`SharedWork.liveVersions`): the run is handed
 *   over, that is, left running with no lease, which that process's sweep
 *   claims (the others' sweeps skip it: `skipped`);
 * - no live process serves it: the run follows `versionPolicy`. `migrate`
 *   moves it forward to the newest live version of its task
 *   (version-order.ts: by release number, else by when that version's
 *   first process registered, which a later process of it inherits, not
 *   by when the latest of them started, so an old process restarted
 *   mid-rollout pulls no run back), recorded
 *   in `RunRecord.migrations`, and runs it here when that is this
 *   process's version, else hands it over. With no live version ahead of
 *   the run's, it stays as it is, for a process of its version or a newer
 *   one to take; `fail` fails it with `RunVersionError`.
 *
 * A process registers the versions it serves (`SharedWork.register`) as it
 * starts, and again on every lease renewal; one not heard from for
 * `leaseMs` is gone. Edge-safe: no `node:` import.
 */
import type { Logger, RunMigration, RunRecord } from '../../types.ts'
import { RunVersionError } from '../../errors.ts'
import { describe } from '../../describe.ts'
import type { TaskDefinition } from '../../types/task-definition.ts'
import type { LiveVersions, RunStore, SharedWork } from '../store/store.ts'
import { forwardVersion } from '../base/version-order.ts'
import { type Clock, isoNowOf } from '../base/clock.ts'

export type VersionPolicy = 'migrate' | 'fail'

export const VERSION_POLICIES: readonly VersionPolicy[] = ['migrate', 'fail']

/** The longest version a run records. */
export const MAX_VERSION_LENGTH = 128

/** How a registry names a task's version: `<task>@<version>` (a task name has no `@`). */
export function versionKey(taskName: string, version: string): string {
  return `${taskName}@${version}`
}

/** What is wrong with `version` as a task's version, or null. */
export function versionProblem(version: unknown): string | null {
  if (typeof version !== 'string' || version.length === 0 || version.length > MAX_VERSION_LENGTH) {
    return `a version must be a string of 1 to ${MAX_VERSION_LENGTH} characters (got ${describe(version)})`
  }
  // Printable ASCII without spaces: it goes into logs, URLs and SQL keys as it is.
  if (!/^[\x21-\x7e]+$/.test(version))
    return `a version holds only printable ASCII characters without spaces (got ${JSON.stringify(version)})`
  return null
}

/** What an attempt about to run here does, by its run's version. */
export type VersionCheck =
  /** Run it here: `run` is the record to run (moved to this version when it was migrated). */
  | { kind: 'run'; run: RunRecord }
  /** Another live process serves the run's version: leave the run to it. */
  | { kind: 'hand-over' }
  /** `versionPolicy: 'fail'`: the run is to fail with `error`, as an attempt that failed for good. */
  | { kind: 'fail'; error: string }
  /** The run is no longer running, or waits as it is for a live version at or past its own: nothing to do here. */
  | { kind: 'done' }

export interface RunVersionsOptions {
  store: RunStore
  shared: SharedWork | undefined
  owner: string
  /** What a migration's time is read from. */
  clock: Clock
  tasks: ReadonlyMap<string, TaskDefinition>
  policy: VersionPolicy
  logger: Logger
}

export class RunVersions {
  readonly #store: RunStore
  readonly #shared: SharedWork | undefined
  readonly #owner: string
  readonly #clock: Clock
  readonly #tasks: ReadonlyMap<string, TaskDefinition>
  readonly #policy: VersionPolicy
  readonly #logger: Logger
  /** Runs said to wait for a newer version, so a sweep that finds them again and again warns once. */
  readonly #waiting = new Set<string>()
  /** The `task@version` keys this process serves; empty when no task has a version. */
  readonly served: readonly string[]

  constructor(options: RunVersionsOptions) {
    this.#store = options.store
    this.#shared = options.shared
    this.#owner = options.owner
    this.#clock = options.clock
    this.#tasks = options.tasks
    this.#policy = options.policy
    this.#logger = options.logger
    this.served = [...options.tasks.values()].flatMap((def) => (def.version === undefined ? [] : [versionKey(def.name, def.version)]))
  }

  /** Whether runs are pinned here: some task has a version, and the store tells live processes apart. */
  get registers(): boolean {
    return this.served.length > 0 && this.#shared?.register !== undefined
  }

  /** Whether `run` may run here as it is: it or its task has no version, or they are the same. */
  matches(run: RunRecord): boolean {
    const mine = this.#tasks.get(run.taskName)?.version
    return run.version === undefined || mine === undefined || run.version === mine
  }

  /** Registers (again) this process as live, serving its versions. */
  async register(): Promise<void> {
    if (this.registers) await this.#shared!.register!(this.#owner, this.served)
  }

  /** Says this process is gone, so its runs go to the policy at once rather than after `leaseMs`. */
  async unregister(): Promise<void> {
    if (this.registers) await this.#shared!.unregister!(this.#owner)
  }

  /**
   * The `task@version` keys that other live processes serve and this one
   * does not: an orphan of one of those is theirs to claim.
   */
  async skipped(): Promise<string[]> {
    if (!this.registers) return []
    const mine = new Set(this.served)
    const skip = new Set<string>()
    for (const live of await this.#shared!.liveVersions!()) {
      if (live.owner === this.#owner) continue
      for (const key of live.versions) if (!mine.has(key)) skip.add(key)
    }
    return [...skip]
  }

  /** What to do with `run`, which `matches` said is not this process's version, before its attempt runs here. */
  async check(run: RunRecord): Promise<VersionCheck> {
    const from = run.version!
    const mine = this.#tasks.get(run.taskName)!.version!
    const live = this.registers ? await this.#shared!.liveVersions!() : []
    const others = live.filter((entry) => entry.owner !== this.#owner)
    if (others.some((entry) => entry.versions.includes(versionKey(run.taskName, from)))) return { kind: 'hand-over' }
    if (this.#policy === 'fail') return { kind: 'fail', error: new RunVersionError(run.id, run.taskName, from).message }
    const past = (run.migrations ?? []).map((migration) => migration.from)
    const to = forwardVersion(from, past, registrationOrder(live, run.taskName, mine))
    if (to === undefined) {
      if (!this.#waiting.has(run.id)) {
        this.#waiting.add(run.id)
        this.#logger.warn(
          `[svc] task "${run.taskName}": run ${run.id} started on version ${from}, which no live process serves any more, and no live version is newer; it waits for a process of ${from} or a newer version`,
        )
      }
      return { kind: 'done' }
    }
    this.#waiting.delete(run.id)
    const migration: RunMigration = { from, to, at: isoNowOf(this.#clock) }
    const moved = await this.#store.updateRun(
      run.id,
      { version: to, migrations: [...(run.migrations ?? []), migration] },
      { status: 'running' },
    )
    if (!moved) return { kind: 'done' }
    this.#logger.warn(
      `[svc] task "${run.taskName}": run ${run.id} started on version ${from}, which no live process serves any more; it moved to version ${to}`,
    )
    return to === mine ? { kind: 'run', run: moved } : { kind: 'hand-over' }
  }
}

/**
 * The versions of `taskName` that live processes serve, by when the
 * earliest of the processes serving each registered (`live` comes newest
 * first), earliest first. `mine` is this process's, live as it asks.
 */
function registrationOrder(live: readonly LiveVersions[], taskName: string, mine: string): string[] {
  const prefix = `${taskName}@`
  const order: string[] = []
  for (let i = live.length - 1; i >= 0; i--) {
    const key = live[i].versions.find((candidate) => candidate.startsWith(prefix))
    const version = key?.slice(prefix.length)
    if (version !== undefined && !order.includes(version)) order.push(version)
  }
  if (!order.includes(mine)) order.push(mine)
  return order
}

/** The version policy of `createTaskRuntime`, from its option or `SVC_VERSION_POLICY`. */
export function resolveVersionPolicy(option: unknown, env: Record<string, string | undefined>): VersionPolicy {
  const value = option ?? (env.SVC_VERSION_POLICY || undefined) ?? 'migrate'
  if (!VERSION_POLICIES.includes(value as VersionPolicy)) {
    const from = option === undefined ? 'SVC_VERSION_POLICY' : 'versionPolicy'
    throw new TypeError(`createTaskRuntime(): ${from} must be 'migrate' or 'fail' (got ${describe(value)})`)
  }
  return value as VersionPolicy
}
