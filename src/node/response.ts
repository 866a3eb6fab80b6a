/**
 * The `ServerResponse` class of the Node server. srvx writes the head with
 * the `statusText` of the `Response`, and a `Response` built without one has
 * an empty one, which Node would send as a blank reason phrase. The standard
 * phrase goes out instead (RFC 9110 §15 names them; clients print it).
 */
import { ServerResponse, type IncomingMessage, type OutgoingHttpHeader, type OutgoingHttpHeaders } from 'node:http'

type Headers = OutgoingHttpHeaders | OutgoingHttpHeader[]

export class SvcServerResponse<Request extends IncomingMessage = IncomingMessage> extends ServerResponse<Request> {
  override writeHead(statusCode: number, statusMessage?: string, headers?: Headers): this
  override writeHead(statusCode: number, headers?: Headers): this
  override writeHead(statusCode: number, reason?: string | Headers, headers?: Headers): this {
    // Without a reason, Node takes the standard phrase of the status.
    if (typeof reason !== 'string' || reason === '') return super.writeHead(statusCode, typeof reason === 'string' ? headers : reason)
    return super.writeHead(statusCode, reason, headers)
  }
}
