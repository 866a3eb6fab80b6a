// A password in a store URL never reaches an error or a log, whatever it
// holds and whether or not the URL parses.
import { describe, expect, it } from 'vitest'
import { storeFromEnv } from '../../src/node.ts'
import { redactUrl } from '../../src/runtime/redact.ts'

// Each is written into the URL as is, not percent-encoded, as people do.
const PASSWORDS = ['hunter2/xyz', 'hun@ter2', 'hun:ter2', 'hun#ter2', 'hun%ter2', 'hun ter2', 'a/b@c:d#e%f g', 'hunter2@']

/** Every piece of `password` between its special characters, as a message must hold none of them. */
function pieces(password: string): string[] {
  return password.split(/[/@:#% ]/).filter((piece) => piece.length > 1)
}

describe('redactUrl', () => {
  it.each(PASSWORDS)('hides the password %j of a postgres:// URL', (password) => {
    const text = redactUrl(`postgres://svc:${password}@127.0.0.1:5432/runs?sslmode=disable`)
    for (const piece of pieces(password)) expect(text).not.toContain(piece)
    expect(text.startsWith('postgres://svc:***@')).toBe(true)
  })

  it('keeps what is not a password', () => {
    expect(redactUrl('postgres://svc:pw@db.internal:5432/runs')).toBe('postgres://svc:***@db.internal:5432/runs')
    expect(redactUrl('postgres://svc@db:5432/runs')).toBe('postgres://svc@db:5432/runs')
    expect(redactUrl('postgres://db:5432/runs')).toBe('postgres://db:5432/runs')
    expect(redactUrl('sqlite:data/runs.db')).toBe('sqlite:data/runs.db')
    expect(redactUrl('memory')).toBe('memory')
  })

  it('hides the password of a URL that does not parse', () => {
    expect(redactUrl('postgres://svc:hunter2/xyz@127.0.0.1:1/runs')).toBe('postgres://svc:***@127.0.0.1:1/runs')
    expect(redactUrl('mysql://user:hunter2@db/app')).toBe('mysql://user:***@db/app')
  })
})

describe('SVC_STORE_URL', () => {
  it.each(PASSWORDS)('an unsupported scheme fails without the password %j', async (password) => {
    const error = await storeFromEnv({ SVC_STORE_URL: `mysql://user:${password}@db/app` }, { defaultStore: 'memory' }).catch((e) => e)
    expect(error).toBeInstanceOf(TypeError)
    for (const piece of pieces(password)) expect(error.message).not.toContain(piece)
  })

  it.each(PASSWORDS)('a postgres:// URL that cannot be used fails without the password %j', async (password) => {
    // Port 1: nothing listens there, so either the URL is refused or the database is unreachable.
    const value = `postgres://svc:${password}@127.0.0.1:1/runs`
    const error = await storeFromEnv({ SVC_STORE_URL: value }, { defaultStore: 'memory' }).catch((e) => e)
    expect(error).toBeInstanceOf(Error)
    expect(error.message).toContain('SVC_STORE_URL')
    for (const piece of pieces(password)) {
      expect(error.message).not.toContain(piece)
      expect(String(error.cause?.message ?? '')).not.toContain(piece)
    }
  })
})
