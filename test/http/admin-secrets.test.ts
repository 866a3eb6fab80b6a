import { describe, expect, it } from 'vitest'
import { createSvcHandler, type RuntimeApiRoute } from '../../src/index.ts'

const routes: RuntimeApiRoute[] = [{ path: '/api/jobs/noop', kind: 'task', module: { POST: async () => 'done' } }]
const quiet = { info() {}, warn() {}, error() {} }

function list(secret: string, authorization: string | undefined): Promise<Response> {
  const handler = createSvcHandler({ routes, env: { NODE_ENV: 'production', THEN_TASK_SECRET: secret }, logger: quiet })
  return handler.fetch(new Request('http://svc/__tasks', { headers: authorization === undefined ? {} : { authorization } }))
}

describe('the task secret in the Authorization header', () => {
  // enqueue() and the Vercel cron check send `Bearer <secret>` verbatim, so
  // any secret the operator sets must be accepted written that way.
  it('accepts a secret that contains spaces, sent as Bearer <secret>', async () => {
    expect((await list('correct horse battery staple', 'Bearer correct horse battery staple')).status).toBe(200)
  })

  it('still refuses a token that is only part of such a secret', async () => {
    const res = await list('correct horse battery staple', 'Bearer correct')
    expect(res.status).toBe(401)
    expect(res.headers.get('www-authenticate')).toMatch(/^Bearer/)
  })

  it('ignores whitespace around the token and the case of the scheme', async () => {
    expect((await list('s3cret', 'bearer   s3cret  ')).status).toBe(200)
    expect((await list('s3cret', 'Bearer s3cret x')).status).toBe(401)
    expect((await list('s3cret', 'Basic s3cret')).status).toBe(401)
  })
})

describe('where the secret is read from', () => {
  const withEnv = (env: Record<string, string>, authorization: string) =>
    createSvcHandler({ routes, env: { NODE_ENV: 'production', ...env }, logger: quiet }).fetch(
      new Request('http://svc/__tasks', { headers: { authorization } }),
    )

  it('an empty THEN_TASK_SECRET counts as unset, so SVC_TASK_SECRET applies', async () => {
    expect((await withEnv({ THEN_TASK_SECRET: '', SVC_TASK_SECRET: 's3cret' }, 'Bearer s3cret')).status).toBe(200)
    expect((await withEnv({ THEN_TASK_SECRET: '', SVC_TASK_SECRET: 's3cret' }, 'Bearer ')).status).toBe(401)
  })
})
