import { gzipSync, gunzipSync } from 'node:zlib'
import { describe, expect, it } from 'vitest'
import type { RuntimeApiRoute } from '../../src/index.ts'
import { createLambdaHandler } from '../../targets/lambda/runtime.ts'

function httpEvent(method: string, path: string) {
  return {
    version: '2.0',
    routeKey: '$default',
    rawPath: path,
    rawQueryString: '',
    headers: { host: 'abc.lambda-url.eu-west-1.on.aws' },
    isBase64Encoded: false,
    requestContext: { domainName: 'abc.lambda-url.eu-west-1.on.aws', http: { method, path, sourceIp: '203.0.113.9' } },
  }
}

const json = JSON.stringify({ message: 'compressed on purpose' })
// "café" in ISO-8859-1: é is the single byte 0xE9, which is not valid UTF-8.
const latin1 = new Uint8Array([0x63, 0x61, 0x66, 0xe9])

const routes: RuntimeApiRoute[] = [
  {
    path: '/api/gzipped',
    module: {
      GET: () => new Response(gzipSync(json), { headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' } }),
    },
  },
  {
    path: '/api/latin1',
    module: { GET: () => new Response(latin1, { headers: { 'content-type': 'text/plain; charset=iso-8859-1' } }) },
  },
  { path: '/api/utf8', module: { GET: () => new Response('crème brûlée', { headers: { 'content-type': 'text/plain; charset=utf-8' } }) } },
]

describe('Lambda results for bodies that are not plain UTF-8 text', () => {
  const handler = createLambdaHandler({ routes, logger: { info() {}, warn() {}, error() {} } })

  // API Gateway and function URLs take a text body as UTF-8: any other bytes must travel base64.
  it('sends a content-encoded body base64, whatever its content type', async () => {
    const result = (await handler(httpEvent('GET', '/api/gzipped'))) as { body: string; isBase64Encoded: boolean; headers: Record<string, string> }
    expect(result.isBase64Encoded).toBe(true)
    expect(result.headers['content-encoding']).toBe('gzip')
    expect(gunzipSync(Buffer.from(result.body, 'base64')).toString()).toBe(json)
  })

  it('sends a text body that is not valid UTF-8 base64, byte for byte', async () => {
    const result = (await handler(httpEvent('GET', '/api/latin1'))) as { body: string; isBase64Encoded: boolean }
    expect(result.isBase64Encoded).toBe(true)
    expect([...Buffer.from(result.body, 'base64')]).toEqual([...latin1])
  })

  it('still sends UTF-8 text as text', async () => {
    const result = (await handler(httpEvent('GET', '/api/utf8'))) as { body: string; isBase64Encoded: boolean }
    expect(result).toMatchObject({ body: 'crème brûlée', isBase64Encoded: false })
  })
})
