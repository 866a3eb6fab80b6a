/**
 * The hand-off between a host that can hold WebSockets and the app.
 *
 * The host (the Node server) registers an upgrade request here, then passes
 * it through the ordinary `fetch` path, so `onRequest` hooks (cookie
 * sessions, say), routing and route params
 * apply to handshakes exactly as to requests. A hot route that accepts the
 * handshake records what to call on open; the host then completes the
 * upgrade. Hosts that never register requests (edge and function targets)
 * get 426 from hot routes.
 */
import type { SvcRequest } from '../http/types.ts'
import type { WebSocketHandler } from './types.ts'

/** What a hot route hands to the host on an accepted handshake. */
export interface AcceptedUpgrade {
  websocket: WebSocketHandler
  req: SvcRequest
  /** The route's URL pattern, for logs. */
  route: string
}

interface Pending {
  accepted: AcceptedUpgrade | undefined
}

// Keyed by the Web Request object, which Hono hands to handlers unchanged.
const pending = new WeakMap<Request, Pending>()

/** Host side: marks `request` as an upgrade this host can complete. */
export function expectUpgrade(request: Request): void {
  pending.set(request, { accepted: undefined })
}

/** Host side: the route's acceptance, once `fetch` has answered. */
export function acceptedUpgrade(request: Request): AcceptedUpgrade | undefined {
  return pending.get(request)?.accepted
}

/** Route side: whether the host can complete an upgrade of `request`. */
export function canUpgrade(request: Request): boolean {
  return pending.has(request)
}

/** Route side: accepts the handshake. */
export function acceptUpgrade(request: Request, accepted: AcceptedUpgrade): void {
  const entry = pending.get(request)
  if (entry) entry.accepted = accepted
}

export function isAcceptedUpgrade(request: Request): boolean {
  return pending.get(request)?.accepted !== undefined
}

/** `Upgrade: websocket` (RFC 6455 §4.1: the token is case-insensitive). */
export function isWebSocketUpgrade(request: Request): boolean {
  const upgrade = request.headers.get('upgrade')
  return upgrade !== null && upgrade.toLowerCase() === 'websocket'
}
