/**
 * `ctx.step.waitForEvent`: a wait for an event of a name whose data holds
 * the values of `match` (docs/events.md).
 *
 * The wait is a token of kind `'event'`, created once per run and step
 * (a replay finds the same one, with the time it began and its deadline),
 * and the event that meets it settles that token: a compare-and-set, so
 * of several events sent at once, or of a send and the wait's own look,
 * exactly one is what the wait resolves with, and the run resumes once.
 *
 * An event is never lost between a send and a wait: the send records the
 * event before it looks for waits, and a wait looks for recorded events
 * (from when it began, less `lookbackSeconds`) once before it suspends and
 * again once its waitpoint is armed (`Waitpoints.armWaitpoint`), so
 * whichever comes second finds the other. A look that meets the wait notes
 * it on the event (`RunStore.noteEventEffects`), as the send does for the
 * waits it meets, so a listing of events shows it either way. Edge-safe.
 */
import type { ReceivedEvent, RunRecord, StepRecord, WaitForEventOptions, Waitpoint } from '../../types.ts'
import { describe } from '../../describe.ts'
import { eventNameProblem } from '../../events/rules.ts'
import { type EventMatch, matchesEvent, matchProblem } from '../../events/match.ts'
import { settledStep } from './token-waits.ts'
import { EVENT_RETENTION_MS, type EventRecord, type RunStore, type TokenRecord } from '../store/store.ts'

/** The token id of run `runId`'s wait for an event at step `stepKey`; distinct from a `waitForToken` token's. */
export function eventWaitTokenId(runId: string, stepKey: string): string {
  return `${runId}:${stepKey}:event`
}

/** What the step resolves to, from its record. */
export function eventResult<T>(step: StepRecord): { event: ReceivedEvent<T> } | { timedOut: true } {
  return step.status === 'timed_out' ? { timedOut: true } : { event: step.output as ReceivedEvent<T> }
}

/**
 * Begins (or, on a replay, finds again) the wait of run `runId` at
 * `stepKey`: resolves to the step to record when an event already meets
 * it or its token was settled, else to the waitpoint to suspend on.
 * `now` (epoch ms) is when it begins, on the runtime's clock.
 */
export async function beginEventWait(
  store: RunStore,
  runId: string,
  stepKey: string,
  name: string,
  opts: WaitForEventOptions | undefined,
  now: number,
): Promise<{ step: StepRecord } | { waitpoint: Extract<Waitpoint, { type: 'event' }> }> {
  const where = `ctx.step.waitForEvent("${stepKey}", ${describe(name)})`
  const problem = eventNameProblem(name) ?? optionsProblem(opts)
  if (problem) throw new TypeError(`${where}: ${problem}`)
  const { match, timeoutSeconds, lookbackSeconds = 0 } = opts ?? {}
  const token = await store.putToken({
    id: eventWaitTokenId(runId, stepKey),
    runId,
    stepKey,
    status: 'waiting',
    kind: 'event',
    createdAt: new Date(now).toISOString(),
    ...(timeoutSeconds === undefined ? {} : { timeoutAt: new Date(now + timeoutSeconds * 1000).toISOString() }),
  })
  // Measured from when the wait first began, so a replay looks back as far as the first attempt did.
  const since = new Date(Date.parse(token.createdAt) - lookbackSeconds * 1000).toISOString()
  const waitpoint: Extract<Waitpoint, { type: 'event' }> = { type: 'event', name, since, tokenId: token.id }
  if (match !== undefined) waitpoint.match = { ...match }
  if (token.timeoutAt !== undefined) waitpoint.timeoutAt = token.timeoutAt
  const settled = token.status === 'waiting' ? await settleFromRecorded(store, waitpoint) : token
  return settled ? { step: settledStep(settled) } : { waitpoint }
}

/**
 * Looks for a recorded event that meets `waitpoint` and settles its token
 * with the first one; resolves to the settled token (by this call or
 * another), or `undefined` while none meets it.
 */
export async function settleFromRecorded(
  store: RunStore,
  waitpoint: Extract<Waitpoint, { type: 'event' }>,
): Promise<TokenRecord | undefined> {
  if (!store.eventsSince) return undefined
  // The first that meets it, however many others of the name came before it.
  const [event] = await store.eventsSince(waitpoint.name, waitpoint.since, 1, waitpoint.match as EventMatch | undefined)
  if (!event) return undefined
  const token = await settleWith(store, waitpoint.tokenId, event)
  // Noted on the event, as a send notes the waits it meets, for listings.
  if (token && metBy(token, event)) await store.noteEventEffects?.(event.id, { resumed: [token.runId] })
  return token
}

/** Whether the wait of `token` resolved with `event`. */
export function metBy(token: TokenRecord, event: EventRecord): boolean {
  return token.status === 'completed' && (token.payload as ReceivedEvent | undefined)?.id === event.id
}

/** Settles the wait's token with `event` unless it is settled already; resolves to the token as it ends up, if it exists. */
export async function settleWith(store: RunStore, tokenId: string, event: EventRecord): Promise<TokenRecord | undefined> {
  const received: ReceivedEvent = { id: event.id, name: event.name, time: event.time }
  if (event.data !== undefined) received.data = event.data
  const result = await store.settleToken(tokenId, 'completed', received)
  return result?.token
}

function optionsProblem(opts: WaitForEventOptions | undefined): string | null {
  if (opts === undefined) return null
  if (opts === null || typeof opts !== 'object')
    return `options must be an object such as { match, timeoutSeconds } (got ${describe(opts)})`
  const { match, timeoutSeconds, lookbackSeconds } = opts
  if (match !== undefined) {
    const problem = matchProblem(match)
    if (problem) return problem
  }
  if (timeoutSeconds !== undefined && (typeof timeoutSeconds !== 'number' || !Number.isFinite(timeoutSeconds) || timeoutSeconds <= 0)) {
    return `timeoutSeconds must be a positive finite number (got ${describe(timeoutSeconds)})`
  }
  const maxLookback = EVENT_RETENTION_MS / 1000
  if (lookbackSeconds !== undefined && (typeof lookbackSeconds !== 'number' || !(lookbackSeconds >= 0) || lookbackSeconds > maxLookback)) {
    return `lookbackSeconds must be a number of seconds from 0 to ${maxLookback}, the time events are kept (got ${describe(lookbackSeconds)})`
  }
  return null
}

/** How many suspended runs one read of `deliverEvent` looks at. */
const DELIVERY_PAGE = 500
/** How many of them `deliverEvent` meets at once. */
const DELIVERY_AT_ONCE = 32

/**
 * The delivery of `event` to the runs suspended on a wait it meets (its
 * name, sent within the wait's window, with data that holds the wait's
 * match): each wait's token is settled once, by whichever event or look
 * comes first, and `resume` resumes the run with it. Resolves to the runs
 * whose wait `event` met (the wait's own second look may be the one to
 * resume it). Reads the runs suspended on an event of its name page by
 * page (`RunQuery.waitingForEvent`, indexed on the durable stores); a store
 * that does not know the filter lists every suspended run, which the
 * checks here then sort out. The waits of a page are met a few at once:
 * each is a write or two of its own, which a store that groups its
 * commits (Postgres, SQLite) shares between them.
 */
export async function deliverEvent(
  store: RunStore,
  event: EventRecord,
  resume: (run: RunRecord, token: TokenRecord) => Promise<unknown>,
): Promise<string[]> {
  const resumed: string[] = []
  const sent = Date.parse(event.time)
  const meet = async (run: RunRecord): Promise<boolean> => {
    const wait = run.suspended!.waitpoint as Extract<Waitpoint, { type: 'event' }>
    const token = await settleWith(store, wait.tokenId, event)
    if (!token || token.status === 'waiting') return false
    await resume(run, token)
    return metBy(token, event)
  }
  for (let cursor: string | undefined; ; ) {
    const page = await store.listRuns({ status: 'suspended', waitingForEvent: event.name, limit: DELIVERY_PAGE, cursor })
    const met = page.filter((run) => {
      const wait = run.suspended?.waitpoint
      return wait?.type === 'event' && wait.name === event.name && sent >= Date.parse(wait.since) && matchesEvent(wait.match, event.data)
    })
    for (let i = 0; i < met.length; i += DELIVERY_AT_ONCE) {
      const batch = met.slice(i, i + DELIVERY_AT_ONCE)
      const answers = await Promise.all(batch.map(meet))
      for (const [k, run] of batch.entries()) if (answers[k]) resumed.push(run.id)
    }
    if (page.length < DELIVERY_PAGE) return resumed
    cursor = page[page.length - 1].id
  }
}
