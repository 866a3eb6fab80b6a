/**
 * `GET /__health`: the liveness probe.
 * Answers without credentials and without running global hooks, so a
 * session check in `onRequest` cannot make a healthy process look dead.
 */
import type { ResponseClass } from '../http/types.ts'

/** The `framework` value of the health body. */
export const FRAMEWORK = 'svc'

const BODY = JSON.stringify({ ok: true, framework: FRAMEWORK })

export const HEALTH_PATH = '/__health'

export function healthResponse(R: ResponseClass): Response {
  // no-store: a cached "ok" would hide a dead process from the prober.
  return new R(BODY, { headers: { 'content-type': 'application/json', 'cache-control': 'no-store' } })
}
