/**
 * Writes a Web `Response` to a Node `ServerResponse`. srvx's FastResponse
 * with a string or byte body goes out with a single `end(body)`, so the
 * head and body leave in one write; srvx's `sendNodeResponse` (a `write`
 * then an `end`) costs a second, vectored write per response, measurably
 * slower for small JSON answers. Stream bodies are piped by srvx once the
 * head is out. An empty status text gets the standard reason phrase
 * instead of a blank one.
 */
import type { ServerResponse } from 'node:http'
import { FastResponse, sendNodeResponse } from 'srvx/node'

interface Prepared {
  status: number
  statusText: string
  headers: string[]
  body: unknown
}

type Preparable = Response & { _toNodeResponse?: () => Prepared }

export function sendResponse(nodeRes: ServerResponse, res: Response): void | Promise<void> {
  let status: number
  let reason: string
  let headers: string[]
  let body: unknown
  const prepare = (res as Preparable)._toNodeResponse
  if (prepare !== undefined) {
    const p = prepare.call(res)
    status = p.status
    reason = p.statusText
    headers = p.headers
    body = p.body
  } else {
    status = res.status
    reason = res.statusText
    headers = []
    // Iteration yields each Set-Cookie on its own (Fetch standard, "sort and combine").
    res.headers.forEach((value, name) => headers.push(name, value))
    body = res.body
  }
  if (nodeRes.headersSent || nodeRes.destroyed) {
    if (body instanceof ReadableStream) body.cancel().catch(() => {})
    return
  }
  if (reason) nodeRes.writeHead(status, reason, headers)
  else nodeRes.writeHead(status, headers)
  if (body === undefined || body === null || typeof body === 'string' || body instanceof Uint8Array) {
    // Node drops the body of HEAD and 204/304 answers itself.
    nodeRes.end(body ?? undefined)
    return
  }
  // The head is out, so srvx only pipes the body.
  return sendNodeResponse(nodeRes, new FastResponse(body as BodyInit, { status }))
}
