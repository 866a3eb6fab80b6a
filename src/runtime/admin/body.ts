/**
 * Reading JSON request bodies with a size limit, for the task admin surface,
 * the revalidate endpoint and `schema.body` validation. Edge-safe: it reads
 * the Web `ReadableStream`, so the limit holds on every target.
 */
import { SvcError } from '../errors.ts'
import { isJsonTooDeep, MAX_JSON_DEPTH } from '../json-depth.ts'

/** The documented default payload limit: 1 MiB. */
export const DEFAULT_BODY_LIMIT = 1024 * 1024

/** HTTP 413 `PAYLOAD_TOO_LARGE`. */
export class PayloadTooLargeError extends SvcError {
  readonly limit: number
  constructor(limit: number) {
    super(`Request body is larger than the ${limit}-byte limit`, 'PAYLOAD_TOO_LARGE', 413)
    this.limit = limit
  }
}

/** HTTP 400 `INVALID_JSON`: a body that is not JSON, or nests too deeply. */
export class InvalidJsonError extends SvcError {
  constructor(message: string) {
    super(message, 'INVALID_JSON', 400)
  }
}

/** The body as text, rejecting with `PayloadTooLargeError` past `limit` bytes. */
export async function readBodyText(request: Request, limit: number): Promise<string> {
  // A declared length over the limit is refused before reading a byte.
  const declared = request.headers.get('content-length')
  if (declared !== null && Number(declared) > limit) throw new PayloadTooLargeError(limit)
  const body = request.body
  if (body === null) return ''
  const reader = body.getReader()
  const decoder = new TextDecoder()
  let size = 0
  let text = ''
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    size += value.byteLength
    if (size > limit) {
      await reader.cancel().catch(() => {})
      throw new PayloadTooLargeError(limit)
    }
    text += decoder.decode(value, { stream: true })
  }
  return text + decoder.decode()
}

/**
 * The JSON body, or `undefined` for an empty one. The body is parsed as JSON
 * whatever its declared type (clients such as `fetch` and `curl -d` send
 * `text/plain` or form types by default); anything else, and JSON nested
 * deeper than `MAX_JSON_DEPTH`, is `INVALID_JSON`.
 */
export async function readJsonBody(request: Request, limit: number): Promise<{ text: string; value: unknown }> {
  const text = await readBodyText(request, limit)
  return { text, value: parseJson(text) }
}

export function parseJson(text: string): unknown {
  if (text.trim() === '') return undefined
  // Checked before parsing: a value that deep could be parsed but never
  // stored or sent back (see json-depth.ts).
  if (isJsonTooDeep(text)) {
    throw new InvalidJsonError(`Request body nests arrays and objects deeper than ${MAX_JSON_DEPTH} levels, the limit`)
  }
  try {
    return JSON.parse(text)
  } catch (error) {
    throw new InvalidJsonError(`Request body is not valid JSON: ${error instanceof Error ? error.message : String(error)}`)
  }
}
