// The query a span records: the value of `token`, and of any parameter
// whose name looks like a secret, is REDACTED; names, order and every other
// parameter are kept as sent, whatever the query holds.
import { describe, expect, it } from 'vitest'
import { isSecretName, REDACTED, redactQuery } from '../../src/runtime/telemetry/redact-query.ts'

describe('redactQuery', () => {
  it('replaces the value of token and keeps the other parameters, in order', () => {
    expect(redactQuery('token=rt1.abc.def&x=1')).toBe('token=REDACTED&x=1')
    expect(redactQuery('x=1&token=rt1.abc.def&y=2')).toBe('x=1&token=REDACTED&y=2')
    expect(REDACTED).toBe('REDACTED')
  })

  it('returns a query with nothing to hide as it is', () => {
    for (const query of ['x=1', 'q=OpenTelemetry&page=2', 'author=ada&keyword=otel&monkey=1', 'a&b&c', '', '&&', '=&=']) {
      expect(redactQuery(query)).toBe(query)
    }
  })

  it('replaces every value of a repeated parameter', () => {
    expect(redactQuery('token=a&token=b&x=1&token=c')).toBe('token=REDACTED&token=REDACTED&x=1&token=REDACTED')
  })

  it('keeps a secret-looking parameter with no value, or an empty one, as it is', () => {
    expect(redactQuery('token&x=1')).toBe('token&x=1')
    expect(redactQuery('token=&x=1')).toBe('token=&x=1')
    expect(redactQuery('x=1&token')).toBe('x=1&token')
  })

  it('hides the whole value, up to the next &, whatever it holds', () => {
    expect(redactQuery('token=a=b;c%26d+e&x=1')).toBe('token=REDACTED&x=1')
    // `;` separates nothing for URLSearchParams, so the value runs on past it.
    expect(redactQuery('x=1;token=abc')).toBe('x=1;token=abc')
    expect(redactQuery('token=abc;x=1')).toBe('token=REDACTED')
  })

  it('does not throw on malformed percent-encoding, and decodes what is well formed', () => {
    for (const query of ['%=1', '%E0%A4%A=1', 'x=%&token=%zz', '%%%=%%%', 'to%ken=1', '%ff%fe=2', '\uD800=3']) {
      expect(() => redactQuery(query)).not.toThrow()
    }
    expect(redactQuery('x=%&token=%zz')).toBe('x=%&token=REDACTED')
    expect(redactQuery('%74oken=abc&%E0%A4%A=1')).toBe('%74oken=REDACTED&%E0%A4%A=1')
    expect(redactQuery('api%5Fkey=abc')).toBe('api%5Fkey=REDACTED')
    expect(redactQuery('auth%5Btoken%5D=abc')).toBe('auth%5Btoken%5D=REDACTED')
    // Decoded once, as URLSearchParams does: this name is `%74oken`, not `token`.
    expect(redactQuery('%2574oken=abc')).toBe('%2574oken=abc')
  })

  // A pass that rescans the rest of the query for each parameter would take minutes on these.
  it('stays linear in the length of the query: a megabyte of any shape takes well under a second', () => {
    const megabyte = 1 << 20
    const shapes = [
      'token=a&'.repeat(megabyte / 8),
      'x=1&'.repeat(megabyte / 4),
      `${'a&'.repeat(megabyte / 2)}token=b`,
      `${'a'.repeat(megabyte)}=1`,
      `token=${'v'.repeat(megabyte)}`,
      `${'%'.repeat(megabyte)}=1`,
      `${'Aa'.repeat(megabyte / 2)}=1`,
      '='.repeat(megabyte),
      `${'%74'.repeat(megabyte / 3)}=1`,
    ]
    for (const query of shapes) {
      const began = performance.now()
      const redacted = redactQuery(query)
      expect(performance.now() - began).toBeLessThan(1000)
      expect(redacted.length).toBeLessThanOrEqual(query.length + megabyte)
    }
    expect(redactQuery(`token=${'v'.repeat(megabyte)}`)).toBe('token=REDACTED')
  })
})

describe('isSecretName', () => {
  it("names the OpenTelemetry semantic conventions' sensitive query parameters", () => {
    for (const name of [
      'AWSAccessKeyId',
      'Signature',
      'sig',
      'X-Goog-Signature',
      'X-Amz-Signature',
      'X-Amz-Credential',
      'X-Amz-Security-Token',
    ]) {
      expect(isSecretName(name), name).toBe(true)
    }
  })

  it('names tokens, secrets, passwords, keys, credentials and sessions, in any case and spelling', () => {
    const names = [
      'token',
      'Token',
      'TOKEN',
      'access_token',
      'accessToken',
      'refresh-token',
      'id_token',
      'secret',
      'client_secret',
      'password',
      'passwd',
      'pwd',
      'key',
      'api_key',
      'apiKey',
      'apikey',
      'X-API-Key',
      'auth',
      'authorization',
      'credential',
      'credentials',
      'session',
      'sessionId',
    ]
    for (const name of names) expect(isSecretName(name), name).toBe(true)
  })

  it('leaves names that merely contain a short secret word alone', () => {
    for (const name of ['x', 'q', 'author', 'keyword', 'monkey', 'signal', 'design', 'page', 'cursor', 'limit', 'after', '']) {
      expect(isSecretName(name), name).toBe(false)
    }
  })
})
