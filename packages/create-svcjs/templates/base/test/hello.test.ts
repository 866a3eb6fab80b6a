import assert from 'node:assert/strict'
import { test } from 'node:test'
import { createApiApp } from 'svcjs'
import * as hello from '../src/api/hello.ts'

// The route served in-process: app.request() answers as the server would, without a port.
const app = createApiApp({ routes: [{ path: '/api/hello', module: hello }] })

test('GET /api/hello greets the world', async () => {
  const res = await app.request('/api/hello')
  assert.equal(res.status, 200)
  assert.deepEqual(await res.json(), { hello: 'world' })
})

test('GET /api/hello?name= greets by name', async () => {
  const res = await app.request('/api/hello?name=Ada')
  assert.deepEqual(await res.json(), { hello: 'Ada' })
})

test('other methods get 405', async () => {
  const res = await app.request('/api/hello', { method: 'DELETE' })
  assert.equal(res.status, 405)
})
