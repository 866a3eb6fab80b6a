/**
 * Writes a Web `Response` to a Node `ServerResponse`. srvx's FastResponse
 * with a string or byte body goes out with a single `end(body)`, so the
 * head and body leave in one write; srvx's `sendNodeResponse` (a `write`
 * then an `end`) costs a second, vectored write per response, measurably
 * slower for small JSON answers. Everything else (streams, native
 * responses) goes through srvx.
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
  const prepare = (res as Preparable)._toNodeResponse
  if (prepare === undefined) return sendNodeResponse(nodeRes, res)
  const p = prepare.call(res)
  const body = p.body
  if (body === undefined || body === null || typeof body === 'string' || body instanceof Uint8Array) {
    if (nodeRes.headersSent || nodeRes.destroyed) return
    // An empty reason phrase lets Node use the standard one.
    if (p.statusText) nodeRes.writeHead(p.status, p.statusText, p.headers)
    else nodeRes.writeHead(p.status, p.headers)
    // Node drops the body of HEAD and 204/304 answers itself.
    nodeRes.end(body ?? undefined)
    return
  }
  // A stream: rebuild the response and let srvx pipe it.
  const pairs: [string, string][] = []
  for (let i = 0; i < p.headers.length; i += 2) pairs.push([p.headers[i], p.headers[i + 1]])
  return sendNodeResponse(nodeRes, new FastResponse(body as BodyInit, { status: p.status, statusText: p.statusText, headers: pairs }))
}
