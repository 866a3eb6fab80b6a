/**
 * Run tokens: `createRunToken()` signs a claim to read one run, and the
 * task server's check lets through that run only, until the token
 * expires, signed with a key derived from its own secret. Malformed and
 * oversized tokens are refused before any signature work.
 */
import { createHmac, hkdfSync } from 'node:crypto'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { createRunToken, createSvcHandler, setActiveTaskRuntime } from '../../src/index.ts'
import { MAX_RUN_TOKEN_SECONDS } from '../../src/runtime/admin/create-run-token.ts'
import {
  MAX_RUN_TOKEN_LENGTH,
  RUN_TOKEN_KEY_INFO,
  RUN_TOKEN_PREFIX,
  signRunToken,
  verifyRunToken,
} from '../../src/runtime/admin/run-token.ts'
import { signClaim } from '../../src/runtime/tasks/base/signing.ts'

const SECRET = '4f3c9a1e7b2d8c6f0a5e9d3b1c7f2a8e6d4b0c9f3a7e1d5b8c2f6a0e4d9b3c7f'
const SERVER_SECRET = 'the-server-secret-of-at-least-32-bytes'
const ENV_SECRET = 'the-secret-from-the-environment-32+'
const RUN = '0195f3a2-7c1e-7b4a-9f00-5d8e2c1a4b6d'
const OTHER = '0195f3a2-7c1e-7b4a-9f00-000000000000'

afterEach(() => {
  setActiveTaskRuntime(null)
  vi.unstubAllEnvs()
})

describe('a run token', () => {
  it('lets its holder read its run, until it expires', async () => {
    const token = await createRunToken(RUN, { secret: SECRET })
    const check = await verifyRunToken(token, RUN, SECRET)
    expect(check).toMatchObject({ ok: true, run: RUN })
    // One hour by default.
    const expiresAt = (check as { expiresAt: number }).expiresAt
    expect(Math.abs(expiresAt - (Date.now() / 1000 + 3600))).toBeLessThan(5)
  })

  it('is compact and URL-safe: rt2.<payload>.<signature> in base64url', async () => {
    const token = await createRunToken(RUN, { secret: SECRET })
    expect(token).toMatch(/^rt2\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{43}$/)
    expect(encodeURIComponent(token)).toBe(token)
    expect(token.length).toBeLessThan(150)
  })

  it('lasts expiresIn seconds, and is refused as RUN_TOKEN_EXPIRED after that', async () => {
    const token = await createRunToken(RUN, { secret: SECRET, expiresIn: 60 })
    expect((await verifyRunToken(token, RUN, SECRET, Date.now() + 30_000)).ok).toBe(true)
    const late = await verifyRunToken(token, RUN, SECRET, Date.now() + 61_000)
    expect(late).toMatchObject({ ok: false, code: 'RUN_TOKEN_EXPIRED' })
    expect((late as { message: string }).message).toMatch(/expired at \d{4}-\d\d-\d\dT.*ask the app for a new one/)
  })

  it('does not read another run: RUN_TOKEN_WRONG_RUN', async () => {
    const token = await createRunToken(RUN, { secret: SECRET })
    expect(await verifyRunToken(token, OTHER, SECRET)).toMatchObject({ ok: false, code: 'RUN_TOKEN_WRONG_RUN' })
  })

  it('signed with another secret, or altered in any part, is RUN_TOKEN_INVALID', async () => {
    const token = await createRunToken(RUN, { secret: SECRET })
    expect(await verifyRunToken(token, RUN, 'another-secret')).toMatchObject({ ok: false, code: 'RUN_TOKEN_INVALID' })
    const [prefix, payload, signature] = token.split('.')
    // A payload claiming another run, with the original signature.
    const forged = btoa(JSON.stringify({ run: OTHER, exp: 9_999_999_999 })).replace(/=+$/, '')
    expect(await verifyRunToken(`${prefix}.${forged}.${signature}`, OTHER, SECRET)).toMatchObject({
      ok: false,
      code: 'RUN_TOKEN_INVALID',
      message: expect.stringMatching(/not signed with the task secret/),
    })
    // One character changed anywhere in the signature or the payload.
    const flip = (text: string, at: number) => text.slice(0, at) + (text[at] === 'A' ? 'B' : 'A') + text.slice(at + 1)
    for (const changed of [`${prefix}.${payload}.${flip(signature, 5)}`, `${prefix}.${flip(payload, 3)}.${signature}`]) {
      expect(await verifyRunToken(changed, RUN, SECRET)).toMatchObject({ ok: false, code: 'RUN_TOKEN_INVALID' })
    }
  })

  it.each([
    ['empty', ''],
    ['the task secret itself', SECRET],
    ['without the format prefix', 'rt0.abc.def'],
    ['without a signature', 'rt2.eyJydW4iOiJ4In0'],
    ['with a part too many', 'rt2.a.b.c'],
    ['not base64url', 'rt2.a+b/.c=='],
    ['a signature of the wrong length', 'rt2.eyJydW4iOiJ4In0.AAAA'],
    ['blanks inside', 'rt2.eyJy dW4i.AAAA'],
  ])('malformed (%s) is RUN_TOKEN_INVALID', async (_, token) => {
    expect(await verifyRunToken(token, RUN, SECRET)).toMatchObject({ ok: false, code: 'RUN_TOKEN_INVALID' })
  })

  it('signed, but whose payload is not { run, exp }, is RUN_TOKEN_INVALID', async () => {
    const token = await signRunToken(RUN, 1.5, SECRET)
    expect(await verifyRunToken(token, RUN, SECRET)).toMatchObject({
      ok: false,
      code: 'RUN_TOKEN_INVALID',
      message: expect.stringMatching(/payload/),
    })
  })

  it('is refused unread past MAX_RUN_TOKEN_LENGTH, however it is made, in time that does not grow with it', async () => {
    const valid = await createRunToken(RUN, { secret: SECRET })
    const oversized = `${valid}${'A'.repeat(MAX_RUN_TOKEN_LENGTH)}`
    expect(await verifyRunToken(oversized, RUN, SECRET)).toMatchObject({
      ok: false,
      code: 'RUN_TOKEN_INVALID',
      message: expect.stringMatching(/more than/),
    })
    const huge = `rt2.${'.'.repeat(5_000_000)}`
    const started = performance.now()
    expect(await verifyRunToken(huge, RUN, SECRET)).toMatchObject({ ok: false, code: 'RUN_TOKEN_INVALID' })
    expect(performance.now() - started).toBeLessThan(50)
  })
})

describe('the key a run token is signed with', () => {
  const payloadOf = (token: string) => token.slice(0, token.lastIndexOf('.'))
  const signatureOf = (token: string) => token.slice(token.lastIndexOf('.') + 1)

  it('is HKDF-SHA-256 of the task secret with the label "svc run token v2", not the secret itself', async () => {
    const token = await createRunToken(RUN, { secret: SECRET })
    const keyedWithSecret = createHmac('sha256', SECRET).update(payloadOf(token)).digest('base64url')
    expect(signatureOf(token)).not.toBe(keyedWithSecret)
    // RFC 5869 with an empty salt, which §2.2 reads as HashLen zero bytes.
    const derived = Buffer.from(hkdfSync('sha256', SECRET, Buffer.alloc(0), 'svc run token v2', 32))
    expect(signatureOf(token)).toBe(createHmac('sha256', derived).update(payloadOf(token)).digest('base64url'))
  })

  it('is derived again for each secret, however many a process signs with', async () => {
    const secrets = Array.from({ length: 20 }, (_, i) => `${SECRET}-${i}`)
    const tokens = await Promise.all(secrets.map((secret) => createRunToken(RUN, { secret })))
    for (const [i, secret] of secrets.entries()) {
      expect((await verifyRunToken(tokens[i], RUN, secret)).ok).toBe(true)
      expect((await verifyRunToken(tokens[i], RUN, secrets[(i + 1) % secrets.length])).ok).toBe(false)
    }
  })

  it('makes a token of the retired rt1 format, keyed with the secret itself, a RUN_TOKEN_INVALID that says to make it again', async () => {
    const signed = `rt1.${Buffer.from(JSON.stringify({ run: RUN, exp: Math.floor(Date.now() / 1000) + 3600 })).toString('base64url')}`
    const old = `${signed}.${createHmac('sha256', SECRET).update(signed).digest('base64url')}`
    expect(await verifyRunToken(old, RUN, SECRET)).toEqual({
      ok: false,
      code: 'RUN_TOKEN_INVALID',
      message:
        'The run token is in the retired "rt1." format, which this server no longer accepts: tokens made before svc signed them with a derived key must be made again. Ask the app for a new one (createRunToken() makes "rt2." tokens)',
    })
  })
})

describe('a run token that allows signals', () => {
  const claimOf = (token: string) => JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString())

  it('says so in its signed claim: sig 1 for any signal, the names for some, nothing for a read-only token', async () => {
    expect(claimOf(await createRunToken(RUN, { secret: SECRET }))).toEqual({ run: RUN, exp: expect.any(Number) })
    expect(claimOf(await createRunToken(RUN, { secret: SECRET, signals: false }))).toEqual({ run: RUN, exp: expect.any(Number) })
    expect(claimOf(await createRunToken(RUN, { secret: SECRET, signals: true }))).toEqual({ run: RUN, exp: expect.any(Number), sig: 1 })
    const some = await createRunToken(RUN, { secret: SECRET, signals: ['message', 'chat/typing', 'message'] })
    expect(claimOf(some)).toEqual({ run: RUN, exp: expect.any(Number), sig: ['message', 'chat/typing'] })
    expect(await verifyRunToken(some, RUN, SECRET)).toMatchObject({ ok: true, signals: ['message', 'chat/typing'] })
    expect(await verifyRunToken(await createRunToken(RUN, { secret: SECRET }), RUN, SECRET)).toMatchObject({ ok: true, signals: undefined })
  })

  it('is RUN_TOKEN_INVALID when its signed sig is neither 1 nor a list of signal names', async () => {
    for (const sig of [true, 2, null, [], ['no spaces'], 'message', [1]]) {
      const claim = { run: RUN, exp: Math.floor(Date.now() / 1000) + 60, sig }
      const token = await signClaim(RUN_TOKEN_PREFIX, claim, SECRET, RUN_TOKEN_KEY_INFO)
      expect(await verifyRunToken(token, RUN, SECRET), JSON.stringify(sig)).toMatchObject({
        ok: false,
        code: 'RUN_TOKEN_INVALID',
        message: 'The run token is signed, but its payload is not { run, exp, sig? }',
      })
    }
  })

  it('checks signals, naming the fix', async () => {
    await expect(createRunToken(RUN, { secret: SECRET, signals: 'message' as never })).rejects.toThrow(
      new TypeError(`createRunToken(): signals must be true (any signal) or a list of signal names such as ['message'] (got "message")`),
    )
    await expect(createRunToken(RUN, { secret: SECRET, signals: [] })).rejects.toThrow(
      /signals lists no name; list the signals the token may send, such as \['message'\], or leave signals out for a token that only reads/,
    )
    const error = await createRunToken(RUN, { secret: SECRET, signals: ['ok', 'no spaces'] }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(TypeError)
    expect((error as Error).message).toMatch(
      /^createRunToken\(\): each entry of signals must be a signal name: a signal name is 1 to 128 letters.* \(got "no spaces"\)$/,
    )
    // More names than a token holds.
    const long = Array.from({ length: 8 }, (_, i) => `signal-${i}-${'x'.repeat(40)}`)
    await expect(createRunToken(RUN, { secret: SECRET, signals: long })).rejects.toThrow(
      /the token would be \d+ characters, more than the 512 a run token may have: list fewer or shorter signal names, or pass signals: true/,
    )
  })
})

describe('createRunToken() arguments', () => {
  it('checks the run id, the options and expiresIn, naming the bad value', async () => {
    await expect(createRunToken('', { secret: SECRET })).rejects.toThrow(/runId must be a run id, a non-empty string .* \(got ""\)/)
    await expect(createRunToken(42 as never, { secret: SECRET })).rejects.toThrow(TypeError)
    await expect(createRunToken('x'.repeat(129), { secret: SECRET })).rejects.toThrow(/at most 128 characters/)
    await expect(createRunToken(RUN, 'soon' as never)).rejects.toThrow(/options must be an object .* \(got "soon"\)/)
    await expect(createRunToken(RUN, { secret: SECRET, expiresIn: '60' as never })).rejects.toThrow(
      new TypeError('createRunToken(): expiresIn must be a number of seconds (got "60")'),
    )
    for (const bad of [0, -1, 1.5, Number.NaN, MAX_RUN_TOKEN_SECONDS + 1]) {
      const error = await createRunToken(RUN, { secret: SECRET, expiresIn: bad }).catch((e: unknown) => e)
      expect(error).toBeInstanceOf(RangeError)
      expect((error as Error).message).toMatch(/expiresIn must be a whole number of seconds from 1 to 604800 \(7 days\) \(got /)
    }
    await expect(createRunToken(RUN, { secret: '' })).rejects.toThrow(/secret must be a non-empty string/)
  })

  it('takes up to 7 days', async () => {
    const token = await createRunToken(RUN, { secret: SECRET, expiresIn: MAX_RUN_TOKEN_SECONDS })
    expect((await verifyRunToken(token, RUN, SECRET, Date.now() + (MAX_RUN_TOKEN_SECONDS - 60) * 1000)).ok).toBe(true)
  })
})

describe('the secret createRunToken() signs with', () => {
  it('is, without `secret`, the one the task server in this process checks', async () => {
    vi.stubEnv('SVC_TASK_SECRET', '')
    const handler = createSvcHandler({ routes: [], env: { SVC_TASK_SECRET: SERVER_SECRET } })
    setActiveTaskRuntime(handler.runtime)
    const token = await createRunToken(RUN)
    expect((await verifyRunToken(token, RUN, SERVER_SECRET)).ok).toBe(true)
    await handler.runtime.close()
  })

  it('is, without a server in this process, SVC_TASK_SECRET of the environment', async () => {
    vi.stubEnv('SVC_TASK_SECRET', ENV_SECRET)
    const token = await createRunToken(RUN)
    expect((await verifyRunToken(token, RUN, ENV_SECRET)).ok).toBe(true)
  })

  it('must exist: without one, the error says to set SVC_TASK_SECRET or pass { secret }', async () => {
    vi.stubEnv('SVC_TASK_SECRET', '')
    vi.stubEnv('THEN_TASK_SECRET', '')
    await expect(createRunToken(RUN)).rejects.toThrow(/no task secret to sign the token with\. Set SVC_TASK_SECRET .*or pass \{ secret \}/)
  })
})
