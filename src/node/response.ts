/**
 * The `ServerResponse` class of the Node server, for two things in how srvx
 * writes a response:
 *
 * - srvx writes the head with the `statusText` of the `Response`, and a
 *   `Response` built without one has an empty one, which Node would send as
 *   a blank reason phrase. The standard phrase goes out instead (RFC 9110
 *   §15 names them; clients print it).
 * - srvx writes a body it holds whole (a JSON answer) as `write(body)` then
 *   `end()`. Node sends head and body in one plain write only for
 *   `end(body)`; a `write` corks the socket until the next tick and ends in a
 *   vectored write, which costs a measurable share of a small answer. So a
 *   first write that carries the whole body the head declared
 *   (`Content-Length`) ends the response with it: the message is complete
 *   (RFC 9112 §6.2), and the `end()` that follows has nothing left to do.
 */
import { ServerResponse, type IncomingMessage, type OutgoingHttpHeader, type OutgoingHttpHeaders } from 'node:http'

type Headers = OutgoingHttpHeaders | OutgoingHttpHeader[]

export class SvcServerResponse<Request extends IncomingMessage = IncomingMessage> extends ServerResponse<Request> {
  /** The body length the head declared, until the first write; -1 when it declared none. */
  #declared = -1
  /**
   * A first write carried the whole declared body and ended the response.
   * Bytes written after it lie past the declared length, outside the
   * message (RFC 9112 §6.3): they are dropped, where a write after the end
   * would throw out of the process.
   */
  #complete = false

  override writeHead(statusCode: number, statusMessage?: string, headers?: Headers): this
  override writeHead(statusCode: number, headers?: Headers): this
  override writeHead(statusCode: number, reason?: string | Headers, headers?: Headers): this {
    const fields = typeof reason === 'string' ? headers : reason
    this.#declared = declaredLength(fields)
    // Without a reason, Node takes the standard phrase of the status.
    if (typeof reason !== 'string' || reason === '') return super.writeHead(statusCode, fields)
    return super.writeHead(statusCode, reason, headers)
  }

  override write(chunk: unknown, ...rest: unknown[]): boolean {
    if (this.#complete) return true
    const declared = this.#declared
    if (declared >= 0) {
      this.#declared = -1
      if (rest.length === 0 && byteLength(chunk) === declared) {
        this.#complete = true
        super.end(chunk as string | Uint8Array)
        return true
      }
    }
    return (super.write as (...args: unknown[]) => boolean)(chunk, ...rest)
  }

  override end(...args: unknown[]): this {
    this.#declared = -1
    // Already ended by the first write: only a callback is left to pass on.
    if (this.#complete) return super.end(args.find((arg) => typeof arg === 'function') as (() => void) | undefined)
    return (super.end as (...args: unknown[]) => this)(...args)
  }
}

/** The `Content-Length` among head fields given as srvx does (a flat name, value list), as pairs, or as an object; -1 if none. */
function declaredLength(fields: Headers | undefined): number {
  if (fields === undefined) return -1
  if (!Array.isArray(fields)) {
    for (const name in fields) if (name.toLowerCase() === 'content-length') return Number(fields[name])
    return -1
  }
  if (Array.isArray(fields[0])) {
    for (const [name, value] of fields as unknown as [string, unknown][]) if (name.toLowerCase() === 'content-length') return Number(value)
    return -1
  }
  // srvx lists it last, in lower case.
  for (let i = fields.length - 2; i >= 0; i -= 2) {
    const name = fields[i] as string
    if (name === 'content-length' || name.toLowerCase() === 'content-length') return Number(fields[i + 1])
  }
  return -1
}

function byteLength(chunk: unknown): number {
  if (typeof chunk === 'string') return Buffer.byteLength(chunk)
  return chunk instanceof Uint8Array ? chunk.byteLength : -1
}
