/**
 * `POST /__svc/revalidate`, gated like the task admin surface (its auth,
 * and JSON bodies only). With an ISR cache it purges:
 *
 *   request  `{ "paths"?: string[], "tags"?: string[] }` (at least one entry)
 *   response 200 `{ "ok": true, "purged": string[], "paths": string[], "tags": string[] }`
 *
 * where `purged` lists the cache keys (path plus query) removed. With
 * `createApiApp`'s `revalidateWebhook`, the webhook answers instead.
 */
import type { Logger, RequestInfo, ValidationIssue } from '../types.ts'
import type { EnvLike } from '../env.ts'
import { authorize, type LoopbackExemption } from '../admin/auth.ts'
import { unsupportedContent } from '../admin/content-type.ts'
import { readJsonBody } from '../http/body.ts'
import { internalError, knownErrorResponse, methodNotAllowed } from '../http/errors.ts'
import type { Context } from 'hono'
import type { ResponseClass, SvcRequest } from '../http/types.ts'
import { ValidationError } from '../errors.ts'
import type { IsrCache, RevalidateResult } from './isr.ts'

export const REVALIDATE_PATH = '/__svc/revalidate'

/**
 * The `createApiApp` revalidation webhook. It gets the request (after the
 * task-secret check) and answers with a status and an optional JSON body.
 */
export type RevalidateWebhook = (req: SvcRequest) => Promise<{ status: number; body?: unknown }>

export interface RevalidateOptions {
  R: ResponseClass
  bodyLimit: number
  logger: Logger
  dev: boolean
  /** The environment the secret is read from, per request (edge bindings arrive with the request). */
  env: (c: Context) => EnvLike
  info: (c: Context) => RequestInfo | undefined
  cache?: IsrCache
  webhook?: RevalidateWebhook
  /** The development exemption of the auth, where the host reports peer addresses. */
  loopback?: LoopbackExemption
}

export function revalidateHandler(options: RevalidateOptions): (c: Context) => Promise<Response> {
  const { R, bodyLimit, logger, dev, cache, webhook } = options
  const json = (status: number, body: unknown) =>
    new R(body === undefined ? null : JSON.stringify(body), {
      status,
      headers: body === undefined ? undefined : { 'content-type': 'application/json' },
    })
  return async (c) => {
    const request = c.req.raw
    try {
      const denied = authorize(request, options.info(c), options.env(c), R, options.loopback) ?? unsupportedContent(request, R)
      if (denied) return denied
      if (request.method !== 'POST') return methodNotAllowed(R, request.method, REVALIDATE_PATH, 'POST')
      if (webhook) {
        const result = await webhook(c.req)
        return json(result.status, result.body)
      }
      const { value } = await readJsonBody(request, bodyLimit)
      const { paths, tags } = parseRequest(value)
      const purged = await cache!.purge(paths, tags)
      const result: RevalidateResult = { ok: true, purged, paths, tags }
      return json(200, result)
    } catch (error) {
      const known = knownErrorResponse(R, error)
      if (known) return known
      logger.error(`[svc] ${request.method} ${REVALIDATE_PATH} failed:`, error)
      return internalError(R, error, dev)
    }
  }
}

function parseRequest(value: unknown): { paths: string[]; tags: string[] } {
  const issues: ValidationIssue[] = []
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new ValidationError([{ target: 'body', path: [], message: 'Expected an object { paths?: string[], tags?: string[] }' }])
  }
  const body = value as { paths?: unknown; tags?: unknown }
  const list = (key: 'paths' | 'tags'): string[] => {
    const v = body[key]
    if (v === undefined) return []
    if (!Array.isArray(v) || v.some((s) => typeof s !== 'string' || s === '')) {
      issues.push({ target: 'body', path: [key], message: 'Expected an array of non-empty strings' })
      return []
    }
    if (key === 'paths' && v.some((s: string) => !s.startsWith('/'))) {
      issues.push({ target: 'body', path: [key], message: 'Paths must start with "/"' })
    }
    return v as string[]
  }
  const paths = list('paths')
  const tags = list('tags')
  if (issues.length === 0 && paths.length === 0 && tags.length === 0) {
    issues.push({ target: 'body', path: [], message: 'Give at least one entry in paths or tags' })
  }
  if (issues.length > 0) throw new ValidationError(issues)
  return { paths, tags }
}
