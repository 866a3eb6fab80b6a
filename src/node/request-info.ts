/** What only the Node host knows about a request, handed to the core handler. */
import type { ServerRequest } from 'srvx'
import { RAW_TARGET } from '../runtime/http/path.ts'
import type { RequestInfo } from '../types.ts'

/** Read lazily: the peer address costs a syscall, and most requests never ask for it. */
export class NodeRequestInfo implements RequestInfo {
  readonly #request: ServerRequest
  readonly waitUntil: RequestInfo['waitUntil']
  /** The target `request.url` was built from: routing reads it without building the URL. */
  readonly [RAW_TARGET]: string
  constructor(request: ServerRequest, waitUntil: RequestInfo['waitUntil']) {
    this.#request = request
    this.waitUntil = waitUntil
    this[RAW_TARGET] = request.runtime!.node!.req.url!
  }
  get remoteAddress(): string | undefined {
    return this.#request.runtime?.node?.req.socket?.remoteAddress
  }
}
