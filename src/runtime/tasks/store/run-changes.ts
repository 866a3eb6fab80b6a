/**
 * The run changes one engine makes, for whoever listens in this process:
 * `TaskRuntime.onRunChange`, and through it the admin surface's event
 * stream (`GET /__tasks/events`) and the dashboard. Edge-safe: no `node:`
 * import.
 *
 * On a store several processes share whose `SharedWork` carries changes
 * (`publishChanges`, `onChanges`), the changes of the other processes
 * reach the same subscribers, in the same shape. Each change made here is
 * handed to the store, the changes emitted together (before the
 * microtasks queued meanwhile have run) in one call; the store sends them
 * with those of the next few milliseconds or of its next commit, or drops
 * them while no other process listens. This process listens for the others'
 * only while it has subscribers, from the first one's arrival to the last
 * one's leaving. A change reaches the other processes after it reaches
 * this one's subscribers, so the changes of a run that moves between
 * processes may arrive out of order there: each process's own changes
 * keep their order, not those of two processes.
 */
import type { Logger, RunChange, RunRecord } from '../../types.ts'
import { errorMessage } from '../../errors.ts'
import type { SharedWork } from './store.ts'

interface Subscriber {
  change(change: RunChange): void
  end?(): void
}

/** The store the other processes share with this one, and this engine's id there. */
export interface SharedChanges {
  shared: SharedWork
  owner: string
}

/** One subscription to the other processes' changes: ignored once it is no longer the current one. */
interface RemoteListener {
  stop: Promise<(() => Promise<void>) | undefined>
}

export class RunChanges {
  readonly #logger: Logger
  readonly #subscribers = new Set<Subscriber>()
  readonly #shared: SharedChanges | undefined
  #ended = false
  /** Changes made here since the last publish, sent once the current turn's microtasks ran. */
  #outbox: RunChange[] = []
  /** Set after a publish failed, so a store that stays down is reported once, not at every change. */
  #publishFailing = false
  #remote: RemoteListener | undefined
  readonly #publishLater = () => this.#publish()

  /** With `shared`, a store that carries changes between processes: see above. */
  constructor(logger: Logger, shared?: SharedChanges) {
    this.#logger = logger
    this.#shared = shared?.shared.publishChanges && shared.shared.onChanges ? shared : undefined
  }

  /**
   * Calls `change` for every later change, and `end` once when the engine
   * drains or closes (at once if it already has). Returns the way to stop.
   */
  subscribe(change: (change: RunChange) => void, end?: () => void): () => void {
    if (this.#ended) {
      end?.()
      return () => {}
    }
    const subscriber: Subscriber = { change, end }
    this.#subscribers.add(subscriber)
    if (this.#subscribers.size === 1) this.#listenRemote()
    return () => {
      if (this.#subscribers.delete(subscriber) && this.#subscribers.size === 0) this.#stopRemote()
    }
  }

  /** Tells every subscriber that `run` is now in its status, and the other processes. A subscriber that throws is logged; the others still hear of it. */
  emit(run: RunRecord): void {
    const change: RunChange = { id: run.id, taskName: run.taskName, status: run.status }
    if (this.#shared) {
      if (this.#outbox.length === 0) queueMicrotask(this.#publishLater)
      this.#outbox.push(change)
    }
    this.#deliver(change)
  }

  /**
   * Ends every subscription: the process is on its way out, so open streams
   * must not hold it. The changes of the attempts that finish meanwhile
   * are still published.
   */
  end(): void {
    if (this.#ended) return
    this.#ended = true
    const subscribers = [...this.#subscribers]
    this.#subscribers.clear()
    this.#stopRemote()
    for (const subscriber of subscribers) {
      try {
        subscriber.end?.()
      } catch (error) {
        this.#logger.error(`[svc] task runtime: a run change listener failed to end: ${errorMessage(error)}`)
      }
    }
  }

  #deliver(change: RunChange): void {
    if (this.#subscribers.size === 0) return
    for (const subscriber of this.#subscribers) {
      try {
        subscriber.change(change)
      } catch (error) {
        this.#logger.error(`[svc] task "${change.taskName}": a run change listener failed on run ${change.id}: ${errorMessage(error)}`)
      }
    }
  }

  #publish(): void {
    const { shared, owner } = this.#shared!
    const changes = this.#outbox
    this.#outbox = []
    shared.publishChanges!(owner, changes).then(
      () => {
        this.#publishFailing = false
      },
      (error: unknown) => {
        if (this.#publishFailing) return
        this.#publishFailing = true
        this.#logger.error(
          `[svc] task runtime: could not tell the other processes of ${changes.length} run change(s): ${errorMessage(error)}; ` +
            'their onRunChange listeners and event streams miss them (reported once until a publish succeeds)',
        )
      },
    )
  }

  /** Starts listening for the other processes' changes (the first subscriber arrived). */
  #listenRemote(): void {
    if (!this.#shared) return
    const { shared, owner } = this.#shared
    const remote: RemoteListener = { stop: Promise.resolve(undefined) }
    this.#remote = remote
    remote.stop = shared.onChanges!(owner, (changes) => {
      // A listener stopped, or being stopped, delivers nothing more.
      if (this.#remote !== remote) return
      for (const change of changes) this.#deliver(change)
    }).catch((error: unknown) => {
      this.#logger.error(
        `[svc] task runtime: could not listen for other processes' run changes: ${errorMessage(error)}; ` +
          'onRunChange and the event streams report only this process until a listener arrives again',
      )
      return undefined
    })
  }

  /** Stops listening for the other processes' changes (the last subscriber left, or the engine drains). */
  #stopRemote(): void {
    const remote = this.#remote
    if (!remote) return
    this.#remote = undefined
    remote.stop
      .then((stop) => stop?.())
      .catch((error: unknown) => {
        this.#logger.error(`[svc] task runtime: could not stop listening for other processes' run changes: ${errorMessage(error)}`)
      })
  }
}
