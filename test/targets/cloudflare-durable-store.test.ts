/**
 * The RunStore contract, run against `DurableObjectRunStore` on a real
 * SQLite-backed Durable Object in workerd. A small worker bundles the store
 * and hands each call to one object per store; the suite's store calls it
 * over Miniflare, with errors rebuilt as the worker's own rpc rebuilds them.
 */
import { randomUUID } from 'node:crypto'
import { fileURLToPath } from 'node:url'
import { Miniflare } from 'miniflare'
import { afterAll, beforeAll } from 'vitest'
import { bundle } from '../../src/build/bundle.ts'
import { callObject } from '../../src/cloudflare/rpc.ts'
import type { RunStore } from '../../src/runtime/tasks/index.ts'
import { flowStoreContract } from '../tasks/flow-store-contract.ts'
import { runStoreContract } from '../tasks/store-contract.ts'

const source = (file: string) => JSON.stringify(fileURLToPath(new URL(`../../src/cloudflare/${file}`, import.meta.url)))

const BRIDGE = `
import { DurableObjectRunStore } from ${source('sql-store.ts')}
import { answer, callArgs } from ${source('rpc.ts')}
export class StoreBridge {
  constructor(state) { this.state = state }
  async fetch(request) {
    const maxRuns = new URL(request.url).searchParams.get('maxRuns')
    try {
      this.store ??= new DurableObjectRunStore(this.state.storage, maxRuns === null ? {} : { maxRuns: Number(maxRuns) })
      const call = await request.json()
      const args = callArgs(call)
      // A patch key set to undefined (remove the field) does not survive JSON: its name travels beside it.
      if (call.method === 'updateRun') for (const key of args.pop()) args[1][key] = undefined
      return answer({ value: await this.store[call.method](...args) })
    } catch (error) {
      return answer({ error })
    }
  }
}
export default {
  fetch(request, env) {
    return env.BRIDGE.get(env.BRIDGE.idFromName(new URL(request.url).pathname)).fetch(request)
  },
}
`

let mf: Miniflare

beforeAll(async () => {
  const { code } = await bundle({ input: '/virtual/store-bridge.mjs', entrySource: BRIDGE, platform: 'worker', minify: false })
  mf = new Miniflare({
    modules: [{ type: 'ESModule', path: '/worker.mjs', contents: code }],
    modulesRoot: '/',
    compatibilityDate: '2025-09-01',
    durableObjects: { BRIDGE: { className: 'StoreBridge', useSQLite: true } },
  })
  await mf.ready
})
afterAll(() => mf?.dispose())

/** A store in a fresh object of its own; every method is a call to it. */
function bridgeStore(options?: { maxRuns: number }): RunStore {
  const url = `http://bridge/${randomUUID()}${options ? `?maxRuns=${options.maxRuns}` : ''}`
  const stub = {
    async fetch(request: Request): Promise<Response> {
      const res = await mf.dispatchFetch(url, { method: 'POST', headers: [...request.headers], body: await request.text() })
      return new Response(await res.text(), { status: res.status, headers: [...res.headers] })
    },
  }
  const call =
    (method: string) =>
    (...args: unknown[]) => {
      if (method === 'updateRun') {
        const [id, patch, expect] = args as [string, Record<string, unknown>, unknown]
        args = [id, patch, expect, Object.keys(patch).filter((key) => patch[key] === undefined)]
      }
      return callObject(stub, method, args)
    }
  const methods = [
    'createRun',
    'getRun',
    'updateRun',
    'appendAttempt',
    'saveStep',
    'listRuns',
    'saveTimer',
    'takeTimer',
    'listTimers',
    'putToken',
    'getToken',
    'settleToken',
    'startQueued',
    'debounceRun',
  ]
  return Object.fromEntries([['durable', true], ...methods.map((method) => [method, call(method)])]) as RunStore
}

runStoreContract('DurableObjectRunStore (a SQLite Durable Object in workerd)', (options) => bridgeStore(options))
flowStoreContract('DurableObjectRunStore (a SQLite Durable Object in workerd)', () => bridgeStore())
