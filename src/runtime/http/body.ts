/**
 * Reading JSON request bodies with a size limit, for the task admin surface,
 * the revalidate endpoint and `schema.body` validation. Edge-safe: it reads
 * the Web `ReadableStream`, so the limit holds on every target.
 */
import { PayloadTooLargeError, SvcError } from '../errors.ts'
import { isJsonTooDeep, MAX_JSON_DEPTH } from '../json-depth.ts'

/** The documented default payload limit: 1 MiB. */
export const DEFAULT_BODY_LIMIT = 1024 * 1024

/** HTTP 413 `PAYLOAD_TOO_LARGE`; the task runtime's payload limit raises it too. */
export { PayloadTooLargeError }

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
 * The JSON body, or `undefined` for an empty one. This reads the bytes as
 * JSON and does not look at the declared type: the admin surface and
 * `/__svc/*` refuse any type but JSON before they read (415, see
 * `admin/content-type.ts`), while `schema.body` routes take what clients such as
 * `fetch` and `curl -d` send by default (`text/plain`, form types). Text
 * that is not JSON, and JSON nested deeper than `MAX_JSON_DEPTH`, is
 * `INVALID_JSON`.
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
