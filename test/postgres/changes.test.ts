// Run changes between the processes on one Postgres schema
// (src/postgres/changes.ts, change-listeners.ts), beyond the SharedWork
// contract: what a notification carries, and that nothing is sent while no
// other process listens.
import postgres from 'postgres'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { PostgresRunStore } from '../../src/postgres.ts'
import { changePayloads, changesChannel, MAX_PAYLOAD_BYTES, readPayload } from '../../src/postgres/changes.ts'
import type { RunChange } from '../../src/types.ts'
import { sleep, until } from '../tasks/_helpers.ts'
import { notifyChannel } from '../../src/postgres/migrations.ts'
import { createDatabase } from './_pg.ts'

let url: string
let admin: postgres.Sql
const stores: PostgresRunStore[] = []
beforeAll(async () => {
  url = await createDatabase('changes')
  admin = postgres(url, { onnotice: () => {} })
})
afterAll(async () => {
  await Promise.all(stores.map((s) => s.close()))
  await admin.end()
})

let schemas = 0
const open = (schema: string) => {
  const s = new PostgresRunStore({ url, schema })
  stores.push(s)
  return s
}
const change = (i: number, taskName = 'report'): RunChange => ({ id: `run-${i}`, taskName, status: 'running' })
const bytes = (text: string) => new TextEncoder().encode(text).byteLength

describe('notification payloads', () => {
  it('split the changes into payloads under the limit, which read back as they were, and leave out one too large for any', () => {
    const changes = Array.from({ length: 500 }, (_, i) => change(i, `tâche-${i % 3}`))
    const huge = change(500, 'x'.repeat(MAX_PAYLOAD_BYTES))
    const { payloads, tooLarge } = changePayloads('owner-a', [...changes.slice(0, 250), huge, ...changes.slice(250)])
    expect(payloads.length).toBeGreaterThan(1)
    for (const payload of payloads) expect(bytes(payload)).toBeLessThanOrEqual(MAX_PAYLOAD_BYTES)
    expect(payloads.flatMap((payload) => readPayload(payload, 'owner-b')!)).toEqual(changes)
    expect(tooLarge).toEqual(huge)
    // The publisher's own, and what is not a payload, read as nothing.
    expect(readPayload(payloads[0], 'owner-a')).toBeUndefined()
    expect(readPayload('not json', 'owner-b')).toBeUndefined()
  })

  it('go on a channel of the schema, which stays within the 63 bytes of an identifier', () => {
    expect(changesChannel('svc')).toBe('svc_changes')
    const long = 'a'.repeat(60)
    const other = `${'a'.repeat(59)}b`
    expect(changesChannel(long).length).toBeLessThanOrEqual(63)
    expect(changesChannel(long)).not.toBe(changesChannel(other))
  })
})

describe('publishing on Postgres', () => {
  it('sends no notification while no other owner listens, and sends them once one does, until it stops', async () => {
    const schema = `changes_${++schemas}`
    const [a, b] = [open(schema), open(schema)]
    await Promise.all([a.ready(), b.ready()])
    // A bare LISTEN, which no publisher knows of: it sees what goes on the channel.
    const sent: string[] = []
    const raw = postgres(url, { onnotice: () => {} })
    try {
      await raw.listen(changesChannel(schema), (payload) => sent.push(payload))
      await a.shared.publishChanges('owner-a', [change(1)])
      const own = await a.shared.onChanges('owner-a', () => {})
      await a.shared.publishChanges('owner-a', [change(2)])
      await sleep(200)
      expect(sent).toEqual([])

      const heard: RunChange[] = []
      const stop = await b.shared.onChanges('owner-b', (changes) => heard.push(...changes))
      await a.shared.publishChanges('owner-a', [change(3)])
      await until(() => heard.length === 1 && sent.length === 1)
      expect(heard).toEqual([change(3)])
      expect((await admin.unsafe(`SELECT owner FROM ${schema}.change_listeners ORDER BY owner`)).map((row) => row.owner)).toEqual([
        'owner-a',
        'owner-b',
      ])

      // Once b stops, a knows it within its next look at the listeners.
      await stop()
      await sleep(600)
      await a.shared.publishChanges('owner-a', [change(4)])
      await sleep(200)
      expect(sent).toHaveLength(1)
      await own()
      expect(await admin.unsafe(`SELECT owner FROM ${schema}.change_listeners`)).toEqual([])
    } finally {
      await raw.end()
    }
  })
})

describe('wake-ups on a schema with a long name', () => {
  it('reach the other stores, on a channel within the 63 bytes of an identifier', async () => {
    // 63 characters: the longest schema name, whose `<schema>_wake` pg_notify would refuse.
    const schema = `wake_${'x'.repeat(56)}${++schemas}`.slice(0, 63)
    const [a, b] = [open(schema), open(schema)]
    await Promise.all([a.ready(), b.ready()])
    let woken = 0
    const stop = await b.shared.subscribe(() => woken++)
    await a.shared.wake()
    await until(async () => woken > 0)
    await stop()
    expect(notifyChannel(schema)).toHaveLength(63)
    expect(notifyChannel('svc')).toBe('svc_wake')
  })
})
