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
 *   body written right after the head waits for `end()` and leaves with it;
 *   anything else written, or the end of the tick, sends it as written.
 */
import { ServerResponse, type IncomingMessage, type OutgoingHttpHeader, type OutgoingHttpHeaders } from 'node:http'

type Headers = OutgoingHttpHeaders | OutgoingHttpHeader[]

export class SvcServerResponse<Request extends IncomingMessage = IncomingMessage> extends ServerResponse<Request> {
  /** True between `writeHead` and the first write. */
  #afterHead = false
  #held: string | Uint8Array | undefined

  override writeHead(statusCode: number, statusMessage?: string, headers?: Headers): this
  override writeHead(statusCode: number, headers?: Headers): this
  override writeHead(statusCode: number, reason?: string | Headers, headers?: Headers): this {
    this.#afterHead = true
    // Without a reason, Node takes the standard phrase of the status.
    if (typeof reason !== 'string' || reason === '') return super.writeHead(statusCode, typeof reason === 'string' ? headers : reason)
    return super.writeHead(statusCode, reason, headers)
  }

  override write(chunk: unknown, ...rest: unknown[]): boolean {
    if (this.#afterHead && rest.length === 0 && (typeof chunk === 'string' || chunk instanceof Uint8Array)) {
      this.#afterHead = false
      this.#held = chunk
      queueMicrotask(() => this.#release())
      return true
    }
    this.#afterHead = false
    this.#release()
    return (super.write as (...args: unknown[]) => boolean)(chunk, ...rest)
  }

  override end(...args: unknown[]): this {
    this.#afterHead = false
    const held = this.#held
    if (held !== undefined && (args.length === 0 || typeof args[0] === 'function')) {
      this.#held = undefined
      return (super.end as (...args: unknown[]) => this)(held, ...args)
    }
    this.#release()
    return (super.end as (...args: unknown[]) => this)(...args)
  }

  #release(): void {
    const held = this.#held
    if (held === undefined) return
    this.#held = undefined
    super.write(held)
  }
}
